import { readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { groupAlive, lineage, waitFor, waitForTrigger } from "../../integration/worker/helpers.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { baseFiles, EXECUTABLES } from "./config-fixture.ts";
import {
  postWebhook,
  type RoleProcess,
  startIngress,
  startWorkerProcess,
  writeConfigDir,
} from "./processes.ts";

const HOOK = "api-hook-token";
const ALICE = "alice-token-0123456789";
const BOB = "bob-token-0123456789";

// a setup step that records its process group and waits for the test to open its gate
const HOLD_STEP = `echo $$ > "$RUN_DIR/pgid"; env > "$RUN_DIR/setup-env.txt"; while [ ! -e "$HOME/open-$EVENT_NAME" ]; do sleep 0.05; done`;
// an agent that records its environment and waits for its own gate
const ENV_AGENT = `#!/bin/sh
cat > /dev/null
env > "$RUN_DIR/agent-env.txt"
while [ ! -e "$HOME/agent-open-$EVENT_NAME" ]; do sleep 0.05; done
echo '{"ok": true}'
`;

interface ApiAnswer {
  trigger?: string;
  sandboxed?: boolean;
}

function envFile(text: string): Record<string, string> {
  return Object.fromEntries(
    text
      .split("\n")
      .filter((line) => /^[A-Za-z_][A-Za-z0-9_]*=/.test(line))
      .map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)]),
  );
}

/**
 * The daemon API's features as the worker honours them, through real `svc ingress` and `svc worker`
 * processes: drain/resume, owners of fired work, schedules, cancellation, sandboxed agent tokens.
 */
describe("the worker honours the daemon API (real processes, real Postgres)", () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  let dir: string;
  let ingress: RoleProcess;
  let worker: RoleProcess;
  let url: string;
  const env: Record<string, string> = {
    HOOK_TOKEN: HOOK,
    LINEAR_SECRET: "unused",
    ALICE_TOKEN: ALICE,
    BOB_TOKEN: BOB,
    SVC_WORKER_HEARTBEAT_MS: "200",
    SVC_WORKER_STALE_MS: "5000",
  };
  const api = async (method: string, path: string, token: string, body?: unknown) => {
    const response = await fetch(`${url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const answer = (await response.json().catch(() => null)) as ApiAnswer | null;
    return { status: response.status, body: answer ?? ({} as ApiAnswer) };
  };
  const runDirOf = async (triggerId: string) => {
    const found = await waitFor(async () => {
      const { workloads, invocations } = await lineage(pool, triggerId);
      return invocations[0]?.status === "running" ? { workloads, invocations } : undefined;
    }, `trigger ${triggerId} to run`);
    return {
      invocation: found.invocations[0].id as string,
      runDir: join(dir, "workspaces", found.workloads[0].id, found.invocations[0].id, "run"),
    };
  };
  const pgidIn = (runDir: string) =>
    waitFor(
      async () => Number((await readFile(join(runDir, "pgid"), "utf8").catch(() => "")).trim()),
      "the step's pgid",
    );

  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    const files = baseFiles(
      {
        sources: ["hold-a", "hold-b", "sleeper"]
          .map((n) => `    ${n}-hook: { verify: bearer, secret: "\${HOOK_TOKEN}" }`)
          .join("\n"),
        targets: '  envagent:\n    runtime: command\n    command: ["./bin/env-agent"]\n    timeout: 60s\n',
      },
      {
        "pipelines/hold.yaml": `version: 1.0.0\nagent: helper\ntrigger:\n  webhook: [hold-a-hook, hold-b-hook]\ntargets: [envagent]\nsetup:\n  - run: ${JSON.stringify(HOLD_STEP)}\ninstructions: hold\n`,
        "pipelines/sleeper.yaml": `version: 1.0.0\nagent: helper\ntrigger:\n  webhook: [sleeper-hook]\ntargets: [local]\nsetup:\n  - run: 'echo $$ > "$RUN_DIR/pgid"; sleep 300'\ninstructions: sleep\n`,
        "pipelines/plain.yaml": `version: 1.0.0\nagent: helper\ntargets: [local]\ntrigger:\n  schedule:\n    - cron: "0 0 1 1 *"\nsetup:\n  - run: 'echo ran > "$SURFACE_DIR/ran.txt"'\ninstructions: plain\n`,
      },
    );
    files["daemon.yaml"] +=
      `auth:\n  tokens:\n    alice:\n      scopes: ["*"]\n      secret: "\${ALICE_TOKEN}"\n    bob:\n      scopes: [workloads:read]\n      secret: "\${BOB_TOKEN}"\n`;
    dir = await writeConfigDir({ ...files, "bin/env-agent": ENV_AGENT }, [...EXECUTABLES, "bin/env-agent"]);
    env.HOME = dir; // the steps' and agent's gates live in the test's own directory
    env.SVC_CONFIG_DIR = dir;
    env.SVC_DATABASE_URL = database.url;
    const started = await startIngress(env);
    ingress = started.role;
    url = started.url;
    env.SVC_DAEMON_URL = url;
    worker = await startWorkerProcess(env);
    pool = new pg.Pool({ connectionString: database.url, max: 2 });
  });

  afterAll(async () => {
    await worker?.stop();
    await ingress?.stop();
    await pool?.end();
    await database?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("an agent run gets its own run token and the daemon URL (setup steps get neither); the token dies with the run", async () => {
    await writeFile(join(dir, "open-hold-b-hook"), "");
    const id = await postWebhook(url, "hold-b-hook", HOOK, {});
    const { runDir } = await runDirOf(id);
    const agentEnv = envFile(
      await waitFor(async () => readFile(join(runDir, "agent-env.txt"), "utf8").catch(() => ""), "the agent"),
    );
    expect(agentEnv.SVC_DAEMON_URL).toBe(url);
    expect(agentEnv.SVC_MCP_URL).toBe(`${url}/mcp`);
    expect(agentEnv.SVC_MCP_CONFIG).toBe(join(runDir, "..", "agent", "mcp.json"));
    const token = agentEnv.SVC_AGENT_TOKEN!;
    expect(agentEnv.SVC_MCP_TOKEN).toBe(token);
    expect(token).toMatch(/^svct_/);
    const setupEnv = envFile(await readFile(join(runDir, "setup-env.txt"), "utf8"));
    expect(Object.keys(setupEnv).filter((name) => name.startsWith("SVC_"))).toEqual([]);
    expect(Object.values(setupEnv)).not.toContain(token);
    // while the run lasts the token is valid; it is marked sandboxed only for a pipeline with a sandbox
    const during = await api("GET", "/whoami", token);
    expect(during.status).toBe(200);
    expect(during.body).toMatchObject({ sandboxed: false });
    await writeFile(join(dir, "agent-open-hold-b-hook"), "");
    expect((await waitForTrigger(pool, id)).status).toBe("completed");
    expect((await api("GET", "/whoami", token)).status).toBe(401);
  });

  it("a cancelled running invocation is stopped: its process group is killed, the cancellation stands and is recorded", async () => {
    const id = await postWebhook(url, "sleeper-hook", HOOK, {});
    const { invocation, runDir } = await runDirOf(id);
    const pgid = await pgidIn(runDir);
    expect(groupAlive(pgid)).toBe(true);
    const cancelled = await api("POST", `/invocations/${invocation}/cancel`, ALICE, {});
    expect(cancelled.status).toBe(200);
    await waitFor(async () => !groupAlive(pgid), "the step's process group to be killed");
    await worker.waitForLog(
      (l) => l.event === "invocation.cancelled" && l.invocation === invocation,
      "invocation.cancelled",
    );
    const trigger = await waitForTrigger(pool, id);
    expect(trigger.status).toBe("completed");
    const { invocations, tasks } = await lineage(pool, id);
    expect(invocations[0]).toMatchObject({ status: "cancelled", diagnostic: { code: "cancelled" } });
    expect(tasks.map((t) => [t.kind, t.status, t.diagnostic?.code])).toEqual([
      ["setup", "skipped", "cancelled"],
    ]);
  });

  it("a fired pipeline's workload belongs to the token that fired it; a schedule runs its pipeline", async () => {
    const fired = await api("POST", "/pipelines/plain/fire", ALICE, {});
    expect(fired.status).toBe(202);
    expect((await waitForTrigger(pool, fired.body.trigger!)).status).toBe("completed");
    const { workloads } = await lineage(pool, fired.body.trigger!);
    expect(workloads.map((w) => [w.pipeline, w.owner])).toEqual([["plain", "token:alice"]]);
    expect((await api("GET", `/workloads/${workloads[0].id}`, ALICE)).status).toBe(200);
    // bob reads workloads, but not alice's: the same answer as an absent id
    expect((await api("GET", `/workloads/${workloads[0].id}`, BOB)).status).toBe(404);

    const scheduled = await api("POST", "/schedules/plain/run", ALICE, {});
    expect(scheduled.status).toBe(202);
    expect((await waitForTrigger(pool, scheduled.body.trigger!)).status).toBe("completed");
    const run = await lineage(pool, scheduled.body.trigger!);
    expect(run.workloads.map((w) => [w.pipeline, w.owner])).toEqual([["plain", "token:alice"]]);
    expect(run.artifacts.map((a) => a.name)).toContain("surface/ran.txt");
  });

  it("drain: running work finishes, nothing new is claimed until resume", async () => {
    await writeFile(join(dir, "agent-open-hold-a-hook"), "");
    const running = await postWebhook(url, "hold-a-hook", HOOK, {});
    await runDirOf(running);
    expect((await api("POST", "/admin/drain", ALICE, {})).status).toBe(200);
    await worker.waitForLog((l) => l.event === "worker.drained", "worker.drained");
    const fired = await api("POST", "/pipelines/plain/fire", ALICE, {});
    expect(fired.status).toBe(202);
    // the run that was going when the drain began finishes while drained
    await writeFile(join(dir, "open-hold-a-hook"), "");
    expect((await waitForTrigger(pool, running)).status).toBe("completed");
    // two backstop polls later the new trigger still waits: a drained worker claims nothing
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    const waiting = await pool.query("SELECT status FROM svc.triggers WHERE id = $1", [fired.body.trigger!]);
    expect(waiting.rows[0].status).toBe("queued");
    expect((await lineage(pool, fired.body.trigger!)).workloads).toEqual([]);
    expect((await api("POST", "/admin/resume", ALICE, {})).status).toBe(200);
    expect((await waitForTrigger(pool, fired.body.trigger!)).status).toBe("completed");
  });
});
