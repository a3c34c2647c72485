import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import semver from "semver";
import { describe, expect, it } from "vitest";
import { parseChangelog } from "../../../cli/update/changelog.ts";
import { foreignRelease } from "../../../cli/update/identity.ts";
import { installation } from "../../../cli/update/installation.ts";
import { splitCommand } from "../../../shared/config/migrate/steps/host-tool-command.ts";
import { convertOutput } from "../../../shared/config/migrate/steps/outputs.ts";

const ROOT = join(import.meta.dirname, "../../..");
const pkg = JSON.parse(await readFile(join(ROOT, "package.json"), "utf8")) as {
  name: string;
  bin: Record<string, string>;
  svc: { project: string };
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

  it("is published under a name of its own, with the svc command and the project marker svc update checks", () => {
    // the unscoped `svc` on the public registry is an unrelated SVG converter
    expect(pkg.name).toBe("@svc-daemon/svc");
    expect(Object.keys(pkg.bin)).toEqual(["svc"]);
    expect(pkg.svc).toEqual({ project: "svc-daemon" });
    expect(installation(ROOT)).toMatchObject({ name: pkg.name, project: "svc-daemon" });
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
  it("finds the npm prefix of a global install, and none for a checkout", async () => {
    expect(installation(ROOT).prefix).toBeUndefined();
    expect(installation(ROOT).version).toBe(pkg.version);
    const prefix = await mkdtemp(join(tmpdir(), "svc-prefix-"));
    try {
      // a scoped name is installed two directories deep: <prefix>/lib/node_modules/@scope/name
      const root = join(prefix, "lib", "node_modules", ...pkg.name.split("/"));
      await mkdir(root, { recursive: true });
      await writeFile(join(root, "package.json"), JSON.stringify({ name: pkg.name, version: "1.2.3" }));
      expect(installation(root)).toEqual({ root, name: pkg.name, version: "1.2.3", prefix });
      // the same directory under another package's name is not an npm install of it
      const other = join(prefix, "lib", "node_modules", "svc");
      await mkdir(other, { recursive: true });
      await writeFile(join(other, "package.json"), JSON.stringify({ name: pkg.name, version: "1.2.3" }));
      expect(installation(other).prefix).toBeUndefined();
    } finally {
      await rm(prefix, { recursive: true, force: true });
    }
  });
});

describe("whose release svc update installs", () => {
  const self = { name: "@svc-daemon/svc", project: "svc-daemon" };
  const registry = "https://registry.npmjs.org/";

  it("accepts a release that names this package and carries its marker", () => {
    const ours = { name: self.name, version: "1.0.0", description: "x", svc: { project: "svc-daemon" } };
    expect(foreignRelease(ours, self, registry)).toBeUndefined();
  });

  it("refuses another package, naming its name, version and description", () => {
    const svg = {
      name: "svc",
      version: "0.3.0",
      description: "Scalable Vector Converter - A small SVG to inline CSS converter.",
    };
    expect(foreignRelease(svg, { ...self, name: "svc" }, registry)).toBe(
      'refusing to install svc@0.3.0 ("Scalable Vector Converter - A small SVG to inline CSS converter.") from ' +
        'https://registry.npmjs.org/: it is not svc - its package.json lacks "svc": { "project": "svc-daemon" }, ' +
        "which every svc release carries. Check the registry npm uses (`npm config get registry`, npm_config_registry) " +
        "and the package name; nothing was installed",
    );
    expect(
      foreignRelease({ ...svg, svc: { project: "other" } }, { ...self, name: "svc" }, registry),
    ).toContain("is not svc");
    expect(foreignRelease({ ...svg, svc: { project: "svc-daemon" } }, self, registry)).toContain(
      "its name is not @svc-daemon/svc",
    );
  });

  it("prints registry text as one bounded line without control characters", () => {
    const hostile = {
      name: self.name,
      version: "9.0.0",
      description: `ok\u001b]0;pwned\u0007\n${"a".repeat(500)}`,
    };
    const refusal = foreignRelease(hostile, self, registry)!;
    expect(refusal).not.toMatch(/\p{Cc}/u);
    expect(refusal).toContain(`("ok ]0;pwned ${"a".repeat(200 - "ok ]0;pwned ".length)}…")`);
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
