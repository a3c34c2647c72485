import { mkdir, mkdtemp, readFile, rm, stat, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureCommandManifest } from "../../../cli/command-manifest.ts";

const commandSource = (summary: string) => `import { Command } from "@oclif/core";
export default class Example extends Command {
  static override summary = ${JSON.stringify(summary)};
  async run() {}
}
`;

async function manifestIds(root: string): Promise<string[]> {
  const manifest = JSON.parse(await readFile(join(root, "oclif.manifest.json"), "utf8"));
  return Object.keys(manifest.commands).sort();
}

describe("the generated oclif manifest", () => {
  let root: string;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), "svc-manifest-"));
    await symlink(resolve("node_modules"), join(root, "node_modules"));
    await writeFile(
      join(root, "package.json"),
      JSON.stringify({
        name: "probe",
        version: "1.0.0",
        type: "module",
        oclif: { commands: "./cli/commands" },
      }),
    );
    await mkdir(join(root, "cli", "commands", "topic"), { recursive: true });
    await writeFile(join(root, "cli", "commands", "hello.ts"), commandSource("say hello"));
    // a sibling file whose name shares the directory's prefix is not a command
    await writeFile(join(root, "cli", "commands.ts"), "export const NOT_A_COMMAND = 1;\n");
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it("is created when missing and lists every command file", async () => {
    await ensureCommandManifest(root);
    expect(await manifestIds(root)).toEqual(["hello"]);
  });

  it("is left alone while nothing under cli/ changed", async () => {
    const before = (await stat(join(root, "oclif.manifest.json"))).mtimeMs;
    await new Promise((done) => setTimeout(done, 20));
    await ensureCommandManifest(root);
    expect((await stat(join(root, "oclif.manifest.json"))).mtimeMs).toBe(before);
  });

  it("is rebuilt when a command is added, so a new command is never hidden", async () => {
    await new Promise((done) => setTimeout(done, 20));
    await writeFile(join(root, "cli", "commands", "topic", "verb.ts"), commandSource("do the verb"));
    await ensureCommandManifest(root);
    expect(await manifestIds(root)).toEqual(["hello", "topic:verb"]);
  });

  it("is rebuilt when a command file is removed", async () => {
    await rm(join(root, "cli", "commands", "hello.ts"));
    await ensureCommandManifest(root);
    expect(await manifestIds(root)).toEqual(["topic:verb"]);
  });
});
