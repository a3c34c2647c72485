import { execFileSync, spawn } from "node:child_process";
import { accessSync, constants, readFileSync } from "node:fs";
import { delimiter, dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT, type Run } from "./support.ts";

/**
 * svc needs Node 24 (it runs its .ts sources with Node's type stripping). An older Node — Debian's
 * system Node 20, say — must stop at once with one line that says so and how to get Node 24, instead
 * of failing inside the module loader with ERR_UNKNOWN_FILE_EXTENSION (issue 54).
 */
const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
  name: string;
  version: string;
  engines: { node: string };
};
/** the floor as package.json's engines write it: ">=24" gives "24" */
const FLOOR = /^>=(\d+)$/.exec(pkg.engines.node)?.[1];
const NODE_24 = join(ROOT, "node_modules/.bin/node");
const SVC = join(ROOT, "bin/svc.js");

function major(version: string): number {
  return Number(/^v?(\d+)/.exec(version)?.[1] ?? Number.NaN);
}

/** The machine's first Node below the floor: /usr/bin/node, then any other `node` on PATH. */
function olderNode(): { path: string; version: string } | { reason: string } {
  const candidates = [
    "/usr/bin/node",
    "/usr/local/bin/node",
    ...(process.env.PATH ?? "").split(delimiter).map((dir) => join(dir, "node")),
  ];
  const seen: string[] = [];
  for (const path of new Set(candidates)) {
    try {
      accessSync(path, constants.X_OK);
      const version = execFileSync(path, ["--version"], { encoding: "utf8", timeout: 10_000 }).trim();
      seen.push(`${path} (${version})`);
      if (major(version) < Number(FLOOR)) return { path, version: version.replace(/^v/, "") };
    } catch {
      // not there, or not a Node that runs
    }
  }
  return { reason: `no Node below ${FLOOR} on this machine; found ${seen.join(", ") || "none"}` };
}

function run(command: string, args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: ROOT, env: { NO_COLOR: "1", ...env }, stdio: "pipe" });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.stderr.on("data", (chunk) => (stderr += chunk));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    child.stdin.end();
  });
}

function expectRefused(result: Run, running: string): void {
  const detail = `stdout:\n${result.stdout}\nstderr:\n${result.stderr}`;
  expect(result.code, detail).toBe(1);
  expect(result.stdout, detail).toBe("");
  expect(result.stderr, detail).not.toContain("ERR_UNKNOWN_FILE_EXTENSION");
  // exactly one line
  expect(result.stderr.endsWith("\n"), detail).toBe(true);
  const lines = result.stderr.slice(0, -1).split("\n");
  expect(lines, detail).toHaveLength(1);
  const line = lines[0]!;
  expect(line).toContain(`svc needs Node ${FLOOR} or newer`);
  expect(line).toContain(`this is Node ${running}`);
  // how to get it: the checkout's own Node through npx, nvm, nodejs.org or the distribution
  expect(line).toContain("npx svc");
  expect(line).toContain(`nvm install ${FLOOR}`);
  expect(line).toContain("https://nodejs.org");
  expect(line).toContain("distribution");
}

describe("the Node floor", () => {
  it("is package.json's engines, written as >=<major>", () => {
    expect(FLOOR, `engines.node is ${pkg.engines.node}`).toMatch(/^\d+$/);
  });

  const older = olderNode();
  if ("reason" in older) console.warn(`node-floor: skipping the older-Node tests: ${older.reason}`);
  const withOlder = "reason" in older ? it.skip : it;
  const suffix = "reason" in older ? ` (skipped: ${older.reason})` : "";
  const old = "reason" in older ? { path: "", version: "" } : older;

  withOlder(`refuses an older Node with one line: node bin/svc.js${suffix}`, async () => {
    expectRefused(await run(old.path, [SVC, "--version"], { PATH: process.env.PATH ?? "" }), old.version);
  });

  withOlder(
    `refuses an older Node with one line: the svc command, older Node first on PATH${suffix}`,
    async () => {
      // as an installed `svc` runs: its #!/usr/bin/env node finds the Node first on PATH
      const PATH = [dirname(old.path), process.env.PATH ?? ""].join(delimiter);
      expectRefused(await run(SVC, ["worker", "--help"], { PATH }), old.version);
    },
  );

  it(`still runs on Node ${FLOOR}: svc --version`, async () => {
    const result = await run(NODE_24, [SVC, "--version"], { PATH: process.env.PATH ?? "" });
    const detail = `stdout:\n${result.stdout}\nstderr:\n${result.stderr}`;
    expect(result.code, detail).toBe(0);
    const pinned = execFileSync(NODE_24, ["--version"], { encoding: "utf8" }).trim();
    expect(major(pinned)).toBeGreaterThanOrEqual(Number(FLOOR));
    expect(result.stdout, detail).toBe(
      `${pkg.name}/${pkg.version} ${process.platform}-${process.arch} node-${pinned}\n`,
    );
    expect(result.stderr, detail).toBe("");
  });
});
