import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from "vitest";
import { lineage, waitForTrigger } from "../../integration/worker/helpers.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { postWebhook, type RoleProcess, startIngress, startWorkerProcess } from "../worker/processes.ts";
import { HOST_SECRET, type HostileRepo, hostileConfig, hostileRepo } from "./host-tools-setup.ts";

/**
 * A pull request's agent calls host tools as an agent would (tool protocol, run token; real ingress
 * and worker processes, the pull request cloned from a real repository). What it controls: the
 * checkout's content and every input value. What it must not get: an option into a tool's argv, a
 * file outside its worktree, or its own scripts run by the ingress.
 */

const TOKEN = "e2e-hostile-hook-token-0123456789";

interface CallOutcome {
  tool: string;
  isError?: boolean;
  text?: string;
  structured?: { exitCode: number | null; stdout: string; stderr: string } | null;
  rpcError?: unknown;
}

let database: TestDatabase;
let pool: pg.Pool;
let base: string;
let markers: string;
let dir: string;
let repo: HostileRepo;
let ingress: RoleProcess;
let worker: RoleProcess;
let url: string;
/** the ingress runs with a relative PATH entry first, as developers often set it */
let ingressPath: string;

beforeAll(async () => {
  database = await createTestDatabase(inject("adminDatabaseUrl"));
  base = await mkdtemp(join(tmpdir(), "svc-hostile-tools-"));
  markers = join(base, "markers");
  await mkdir(markers);
  const secretFile = join(base, "host-secret.txt");
  await writeFile(secretFile, `${HOST_SECRET}\n`);
  repo = await hostileRepo(base, markers, secretFile);
  dir = await hostileConfig(repo, markers, join(base, "npm-cache"));
  const env = { SVC_CONFIG_DIR: dir, SVC_DATABASE_URL: database.url, HOOK_TOKEN: TOKEN, LINEAR_SECRET: "x" };
  ingressPath = `node_modules/.bin:${process.env.PATH}`;
  const started = await startIngress({ ...env, PATH: ingressPath });
  ingress = started.role;
  url = started.url;
  worker = await startWorkerProcess({ ...env, SVC_DAEMON_URL: url });
  pool = new pg.Pool({ connectionString: database.url, max: 2 });
});

afterAll(async () => {
  await worker?.stop();
  await ingress?.stop();
  await pool?.end();
  await database?.drop();
  if (dir) await rm(dir, { recursive: true, force: true });
  if (base) await rm(base, { recursive: true, force: true });
});

// each test reads only the markers its own run left
beforeEach(async () => {
  await rm(markers, { recursive: true, force: true });
  await mkdir(markers);
});

/** One run of the pull request whose agent makes `calls`; the run must complete. */
async function agentCalls(
  calls: { tool: string; arguments: Record<string, unknown> }[],
): Promise<{ worktree: string; calls: CallOutcome[] }> {
  const id = await postWebhook(url, "hostile-hook", TOKEN, { repo: "acme/hostile", sha: repo.sha, calls });
  const trigger = await waitForTrigger(pool, id);
  const { invocations } = await lineage(pool, id);
  expect(trigger.status, JSON.stringify(invocations[0]?.diagnostic)).toBe("completed");
  const result = invocations[0].result as { worktree: string; calls: CallOutcome[] };
  expect(result.calls.map((call) => call.tool)).toEqual(calls.map((call) => call.tool));
  // the agent could read nothing of the host: not in its answers, not in the ingress's output
  expect(JSON.stringify(result)).not.toContain(HOST_SECRET);
  expect(JSON.stringify(result)).not.toMatch(/root:x?:0:0/);
  expect(ingress.output.join("\n")).not.toContain(HOST_SECRET);
  return result;
}

function refusal(outcome: CallOutcome): string {
  expect(outcome.isError, JSON.stringify(outcome)).toBe(true);
  expect(outcome.structured ?? null).toBeNull();
  return outcome.text!;
}

async function marker(name: string): Promise<string | undefined> {
  const path = join(markers, name);
  return existsSync(path) ? readFile(path, "utf8") : undefined;
}

describe("a host tool's input cannot become an option", () => {
  it('"--version" for /bin/ls is refused and ls never runs; allow_options: true lets it through', async () => {
    const { calls } = await agentCalls([
      { tool: "host_list", arguments: { path: "--version" } },
      { tool: "host_list", arguments: { path: "-R" } },
      { tool: "host_list-options", arguments: { path: "--version" } },
    ]);
    for (const [index, field] of [
      [0, "--version"],
      [1, "-R"],
    ] as const) {
      expect(refusal(calls[index]!), field).toBe(
        'host tool list: input path may not start with "-" (it would be read as an option); declare allow_options: true on input path to allow it',
      );
    }
    expect(await marker("list-ran")).toBeUndefined();
    expect(ingress.logs.filter((line) => line.event === "mcp.host_tool" && line.tool === "list")).toEqual([]);
    expect(
      ingress.logs.filter((line) => line.event === "mcp.host_tool_refused" && line.tool === "list"),
    ).toHaveLength(2);
    // the input that declares it may be an option reaches ls as one
    expect(calls[2]!.isError).toBe(false);
    expect(calls[2]!.structured!.stdout).toMatch(/^ls \(GNU coreutils\)/);
    expect(await marker("list-options-ran")).toBe("-1 --version\n");
  });
});

describe("a path input stays inside the run's worktree", () => {
  it("../../etc/passwd, an absolute path, links to a file and to directories outside are refused; a path inside arrives resolved", async () => {
    const escapes = [
      "../../etc/passwd",
      "/etc/passwd",
      "leak",
      "up",
      "outside/host-secret.txt",
      "missing.txt",
    ];
    const { worktree, calls } = await agentCalls([
      ...escapes.map((file) => ({ tool: "host_show", arguments: { file } })),
      { tool: "host_show", arguments: { file: "src/ok.txt" } },
    ]);
    for (const [index, file] of escapes.entries()) {
      expect(refusal(calls[index]!), file).toBe(
        `host tool show: input file must name an existing file or directory inside the run's worktree (links followed); ${JSON.stringify(file)} does not`,
      );
    }
    const inside = calls[escapes.length]!;
    expect(inside.structured).toMatchObject({ exitCode: 0, stdout: "inside the worktree\n" });
    // the tool ran once, for the path inside, and got it resolved
    expect(await marker("show-ran")).toBe(`${join(worktree, "src", "ok.txt")}\n`);
  });
});

describe("the checkout cannot put code on a host tool's way", () => {
  it("a tool run by name (/usr/bin/env, npx, a script in WORKTREE) never runs the checkout's node_modules/.bin", async () => {
    const { calls } = await agentCalls([
      { tool: "host_by-name", arguments: {} },
      { tool: "host_npx-lint", arguments: {} },
      { tool: "host_in-worktree", arguments: {} },
    ]);
    expect(await marker("checkout-script-ran")).toBeUndefined();
    for (const call of calls) {
      expect(call.isError, JSON.stringify(call)).toBe(true);
      expect(call.structured!.exitCode).not.toBe(0);
    }
    expect(calls[0]!.structured!.exitCode).toBe(127);
    expect(calls[2]!.structured!.exitCode).toBe(127);
  });

  it("a tool sees an empty working directory of its own, WORKTREE and the ingress's absolute PATH entries", async () => {
    const { worktree, calls } = await agentCalls([{ tool: "host_where", arguments: {} }]);
    const [cwd, entries, seenWorktree, seenPath] = calls[0]!.structured!.stdout.split("--\n");
    const cwdPath = cwd!.trim();
    expect(cwdPath.startsWith(await realpath(tmpdir()))).toBe(true);
    expect(cwdPath.startsWith(worktree)).toBe(false);
    expect(entries).toBe("");
    expect(existsSync(cwdPath)).toBe(false);
    expect(seenWorktree!.trim()).toBe(worktree);
    expect(seenPath!.trim()).toBe(
      ingressPath
        .split(":")
        .filter((entry) => entry.startsWith("/"))
        .join(":"),
    );
    expect(seenPath!.trim().split(":")).not.toContain("node_modules/.bin");
  });

  it("the reference example's lint tool lints a path of the worktree with the ingress's biome, never the checkout's", async () => {
    const { worktree, calls } = await agentCalls([
      { tool: "host_lint", arguments: { path: "src/bad.js" } },
      { tool: "host_lint", arguments: { path: "--write" } },
    ]);
    const linted = calls[0]!;
    expect(linted.structured!.exitCode).toBe(1);
    const output = linted.structured!.stdout + linted.structured!.stderr;
    expect(output).toContain(join(worktree, "src", "bad.js"));
    expect(output).toContain("lint/suspicious/noDebugger");
    expect(refusal(calls[1]!)).toBe(
      `host tool lint: input path must name an existing file or directory inside the run's worktree (links followed); "--write" does not`,
    );
    expect(await marker("checkout-script-ran")).toBeUndefined();
  });
});
