import { createHmac } from "node:crypto";
import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { lineage, waitFor, waitForTrigger } from "../../integration/worker/helpers.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { baseFiles, EXECUTABLES } from "./config-fixture.ts";
import {
  postWebhook,
  type RoleProcess,
  startIngress,
  startWorkerProcess,
  writeConfigDir,
} from "./processes.ts";

const TOKEN = "e2e-hook-token-0123456789";
const LINEAR_SECRET = "e2e-linear-secret";

describe("svc ingress + svc worker as real processes", () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  let dir: string;
  let ingress: RoleProcess;
  let worker: RoleProcess;
  let url: string;

  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    dir = await writeConfigDir(baseFiles(), EXECUTABLES);
    const env = { SVC_CONFIG_DIR: dir, SVC_DATABASE_URL: database.url, HOOK_TOKEN: TOKEN, LINEAR_SECRET };
    const started = await startIngress(env);
    ingress = started.role;
    url = started.url;
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

  it("a signed webhook runs its setup step with exactly the contract's environment, then the command agent", async () => {
    const payload = { release: "v2.0.0", text: "$(touch /tmp/svc-e2e-pwned); `reboot`; ' \" | & ; > /tmp/x" };
    const id = await postWebhook(url, "deploy-hook", TOKEN, payload);
    const trigger = await waitForTrigger(pool, id);
    expect(trigger.status).toBe("completed");
    const { workloads, invocations, tasks, artifacts } = await lineage(pool, id);
    expect(workloads.map((w) => w.pipeline)).toEqual(["notes"]);
    expect(invocations[0]).toMatchObject({ status: "completed", target: "local", diagnostic: null });
    expect(invocations[0].result).toEqual({ summary: "done", event: "deploy-hook" });
    expect(tasks.map((t) => `${t.kind}:${t.status}`)).toEqual([
      "setup:completed",
      "agent:completed",
      "result_check:skipped",
    ]);
    expect(artifacts.map((a) => a.name).sort()).toEqual(["result.json", "setup-0.log", "transcript"]);
    const runRoot = join(dir, "workspaces", workloads[0].id);
    const runDir = join(runRoot, invocations[0].id, "run");
    const lines = (await readFile(join(runDir, "env.txt"), "utf8"))
      .split("\n")
      .filter((l) => /^[A-Za-z_][A-Za-z0-9_]*=/.test(l));
    const env = Object.fromEntries(
      lines.map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]),
    );
    expect(env).toMatchObject({
      WORKTREE: join(runRoot, "checkout"),
      RUN_DIR: runDir,
      SURFACE_DIR: join(runRoot, invocations[0].id, "surface"),
      REPO: "",
      SHA: "",
      BRANCH: "",
      EVENT_NAME: "deploy-hook",
      EVENT_SOURCE: "webhook",
      DEPLOY_ENV: "production",
    });
    expect(JSON.parse(env.PAYLOAD_JSON!)).toEqual(payload);
    expect(env.PREVIOUS_SHA).toBe("");
    // empty: the event is no pull request (docs/worker.md, "Checkouts")
    expect([env.BASE_SHA, env.BASE_REF]).toEqual(["", ""]);
    expect(Object.keys(env).filter((name) => name.startsWith("SVC_"))).toEqual([]);
    // nothing of the worker's environment beyond PATH and HOME: no token, no secret, no database URL
    const allowed = new Set([
      "WORKTREE",
      "RUN_DIR",
      "SURFACE_DIR",
      "REPO",
      "SHA",
      "BRANCH",
      "EVENT_NAME",
      "EVENT_SOURCE",
      "PAYLOAD_JSON",
      // empty: the pipeline has no concurrency group (docs/worker.md, "Incremental reviews")
      "PREVIOUS_SHA",
      "BASE_SHA",
      "BASE_REF",
      "DEPLOY_ENV",
      "PATH",
      "HOME",
      "PWD",
      "SHLVL",
      "_",
      "OLDPWD",
    ]);
    expect(Object.keys(env).filter((name) => !allowed.has(name))).toEqual([]);
    const text = await readFile(join(runDir, "env.txt"), "utf8");
    expect(text).not.toContain(TOKEN);
    expect(text).not.toContain(database.url);
  });

  it("no_matching_pipeline: a route no pipeline lists completes with the code", async () => {
    const id = await postWebhook(url, "orphan-hook", TOKEN, { hello: 1 });
    const trigger = await waitForTrigger(pool, id);
    expect(trigger).toMatchObject({ status: "completed", diagnostic: { code: "no_matching_pipeline" } });
  });

  it("setup_failed: the failing step is named and each step's output is an artifact", async () => {
    const id = await postWebhook(url, "broken-hook", TOKEN, {});
    const trigger = await waitForTrigger(pool, id);
    expect(trigger).toMatchObject({ status: "error", diagnostic: { code: "setup_failed" } });
    const { invocations, artifacts } = await lineage(pool, id);
    expect(invocations[0].diagnostic).toMatchObject({ code: "setup_failed", field: "setup[1]" });
    expect(artifacts.map((a) => [a.name, a.rendered])).toEqual([
      ["setup-0.log", "first\n"],
      ["setup-1.log", "failing\n"],
    ]);
  });

  it("agent_timeout: the whole process tree is killed and the trigger ends in error", async () => {
    const id = await postWebhook(url, "slow-hook", TOKEN, {});
    const trigger = await waitForTrigger(pool, id);
    expect(trigger).toMatchObject({ status: "error", diagnostic: { code: "agent_timeout" } });
    const { workloads, invocations } = await lineage(pool, id);
    expect(invocations[0].diagnostic).toMatchObject({ code: "agent_timeout", target: "slow" });
    const pid = Number(
      await readFile(
        join(dir, "workspaces", workloads[0].id, invocations[0].id, "run", "grandchild.pid"),
        "utf8",
      ),
    );
    await waitFor(async () => {
      try {
        process.kill(pid, 0);
        return false;
      } catch {
        return true;
      }
    }, "the agent's grandchild to be killed");
  });

  it("result_invalid: the failing path is named", async () => {
    const id = await postWebhook(url, "strict-hook", TOKEN, {});
    const trigger = await waitForTrigger(pool, id);
    expect(trigger).toMatchObject({ status: "error", diagnostic: { code: "result_invalid" } });
    const { invocations } = await lineage(pool, id);
    expect(invocations[0].diagnostic).toMatchObject({
      code: "result_invalid",
      path: "/review/event",
      target: "strict",
    });
  });

  it("unknown_agent_reference: a tracker agent-session event for an unconfigured agent is discarded, not an error", async () => {
    const body = JSON.stringify({
      type: "AgentSessionEvent",
      action: "created",
      webhookTimestamp: Date.now(),
      agentSession: { agent: { name: "nobody" } },
    });
    const response = await fetch(`${url}/webhooks/linear`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "linear-signature": createHmac("sha256", LINEAR_SECRET).update(body).digest("hex"),
      },
      body,
    });
    expect(response.status).toBe(202);
    const { trigger: id } = (await response.json()) as { trigger: string };
    const trigger = await waitForTrigger(pool, id);
    expect(trigger).toMatchObject({ status: "discarded", diagnostic: { code: "unknown_agent_reference" } });
    const errors = await pool.query("SELECT id FROM svc.triggers WHERE status = 'error'");
    expect(errors.rows.map((r) => r.id)).not.toContain(id);
  });
});
