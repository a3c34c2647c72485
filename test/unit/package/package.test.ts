import { readFile } from "node:fs/promises";
import { join } from "node:path";
import semver from "semver";
import { describe, expect, it } from "vitest";
import { parseChangelog } from "../../../cli/update/changelog.ts";
import { installation } from "../../../cli/update/installation.ts";
import { splitCommand } from "../../../shared/config/migrate/steps/host-tool-command.ts";
import { convertOutput } from "../../../shared/config/migrate/steps/outputs.ts";

const ROOT = join(import.meta.dirname, "../../..");
const pkg = JSON.parse(await readFile(join(ROOT, "package.json"), "utf8")) as {
  name: string;
  version: string;
  private?: boolean;
  engines: { node: string };
  files: string[];
  devDependencies: { node: string };
};

describe("package.json", () => {
  it("is publishable, and its engines agree with .nvmrc and the pinned node", async () => {
    expect(pkg.private).toBeUndefined();
    const nvmrc = (await readFile(join(ROOT, ".nvmrc"), "utf8")).trim();
    expect(pkg.engines.node).toBe(`>=${nvmrc}`);
    expect(semver.minVersion(pkg.devDependencies.node)?.major).toBe(Number(nvmrc));
    expect(semver.satisfies(process.versions.node, pkg.engines.node)).toBe(true);
    for (const entry of ["bin/", "cli/", "db/", "examples/", "CHANGELOG.md"])
      expect(pkg.files).toContain(entry);
    expect(pkg.files.some((entry) => entry.startsWith("test"))).toBe(false);
  });

  it("CHANGELOG.md starts with this release and carries the history of every release", async () => {
    const releases = parseChangelog(await readFile(join(ROOT, "CHANGELOG.md"), "utf8"));
    expect(releases[0]!.version).toBe(pkg.version);
    const versions = releases.map((release) => release.version);
    expect(versions).toEqual([...versions].sort(semver.rcompare));
    for (const version of ["0.11.0", "0.10.0", "0.9.0", "0.6.5", "0.5.1", "0.5.0", "0.3.7", "0.2.3"])
      expect(versions).toContain(version);
  });
});

describe("installation", () => {
  it("finds the npm prefix of a global install, and none for a checkout", () => {
    expect(installation(ROOT).prefix).toBeUndefined();
    expect(installation(ROOT).version).toBe(pkg.version);
  });
});

describe("splitting a host tool's run: command", () => {
  const env = { PATH: "/usr/bin:/bin" };
  it("splits plain words and whole-word input references", () => {
    expect(splitCommand("/usr/bin/npx biome check $path", env)).toEqual({
      exec: "/usr/bin/npx",
      args: ["biome", "check", "$path"],
    });
  });
  it("resolves a bare executable on PATH", () => {
    expect(splitCommand("env -i", env)).toEqual({ exec: "/usr/bin/env", args: ["-i"] });
  });
  it("leaves what needs a shell to the operator", () => {
    for (const run of ["git diff | sort", "echo 'a b'", "ls *.ts", "cat $HOME/x", "a > b", "x && y"])
      expect(splitCommand(run, env)).toHaveProperty("reason");
    expect(splitCommand("no-such-tool-anywhere x", env)).toEqual({
      reason: '"no-such-tool-anywhere" is not on PATH here, so its absolute path is unknown',
    });
  });
});

describe("converting an old output:", () => {
  it("maps each kind to its handler and schema", () => {
    expect(convertOutput(["review", { type: "chat", channel: "C1" }], ["bot"])).toEqual({
      result: {
        schema: {
          type: "object",
          properties: {
            review: { $ref: "svc://schemas/codehost/review/v1" },
            message: { $ref: "svc://schemas/chat/message/v1" },
          },
          required: ["review", "message"],
        },
      },
      outputs: {
        review: { handler: "codehost.review" },
        message: { handler: "chat.message", config: { bot: "bot", channel: "C1" } },
      },
    });
  });
  it("refuses what has no replacement or lacks the chat bot", () => {
    expect(convertOutput("upsert-comment", [])).toHaveProperty("reason");
    expect(convertOutput({ type: "chat", channel: "C1" }, ["a", "b"])).toHaveProperty("reason");
  });
});
