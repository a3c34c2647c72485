import { rm } from "node:fs/promises";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { lineage, waitFor, waitForTrigger } from "../../integration/worker/helpers.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { baseFiles, EXECUTABLES } from "./config-fixture.ts";
import { FakeModelApi } from "./fake-model-api.ts";
import {
  postWebhook,
  type RoleProcess,
  startIngress,
  startWorkerProcess,
  writeConfigDir,
} from "./processes.ts";

const TOKEN = "credential-hook-token";

function openaiTarget(name: string, credentials: [string, string][]): string {
  return `  ${name}:
    runtime: openai
    base_url: "\${MODEL_URL}"
    model: test-model
    timeout: 30s
    credentials:
${credentials.map(([credential, env]) => `      - name: ${credential}\n        secret: "\${${env}}"`).join("\n")}
`;
}

function openaiPipeline(name: string, target: string): string {
  return `version: 1.0.0
agent: helper
trigger:
  webhook: [${name}-hook]
targets: [${target}]
instructions: answer
`;
}

const SOURCES = ["solo", "duo", "multi", "cool"]
  .map((n) => `    ${n}-hook: { verify: bearer, secret: "\${HOOK_TOKEN}" }`)
  .join("\n");
const TARGETS = [
  openaiTarget("solo", [["a", "SOLO_KEY"]]),
  openaiTarget("duo", [
    ["b1", "DUO_KEY_1"],
    ["b2", "DUO_KEY_2"],
  ]),
  openaiTarget("multi", [
    ["c403", "MULTI_KEY_403"],
    ["crevoked", "MULTI_KEY_REVOKED"],
    ["cexpired", "MULTI_KEY_EXPIRED"],
    ["cgood", "MULTI_KEY_GOOD"],
  ]),
  openaiTarget("cool", [["k", "COOL_KEY"]]),
].join("");

/**
 * Every row of the contract's credential table, against a real model API double and real worker
 * processes that are really stopped and started again.
 */
describe("credential cooldowns (svc worker processes, real Postgres, local model API)", () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  let dir: string;
  let ingress: RoleProcess;
  let worker: RoleProcess | undefined;
  let url: string;
  const api = new FakeModelApi();
  const env: Record<string, string> = {
    HOOK_TOKEN: TOKEN,
    LINEAR_SECRET: "unused",
    SOLO_KEY: "solo-key-1",
    DUO_KEY_1: "duo-key-1",
    DUO_KEY_2: "duo-key-2",
    MULTI_KEY_403: "multi-403",
    MULTI_KEY_REVOKED: "multi-revoked",
    MULTI_KEY_EXPIRED: "multi-expired",
    MULTI_KEY_GOOD: "multi-good",
    COOL_KEY: "cool-key",
    SVC_WORKER_PROBE_MS: "200",
  };

  const restartWorker = async () => {
    if (worker) expect(await worker.stop("SIGTERM")).toBe(0);
    worker = await startWorkerProcess(env);
    return worker;
  };
  const cooldown = async (target: string, credential: string) =>
    (
      await pool.query("SELECT * FROM svc.credential_cooldowns WHERE target = $1 AND credential = $2", [
        target,
        credential,
      ])
    ).rows[0];
  /** a command-target run that completes proves the worker processed everything sent before it */
  const barrier = async () => {
    const id = await postWebhook(url, "deploy-hook", TOKEN, {});
    expect((await waitForTrigger(pool, id)).status).toBe("completed");
  };
  const invocationStatus = async (triggerId: string) =>
    (await lineage(pool, triggerId)).invocations.map((i) => i.status);

  beforeAll(async () => {
    await api.start();
    env.MODEL_URL = api.url;
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    env.SVC_DATABASE_URL = database.url;
    const pipelines = Object.fromEntries(
      ["solo", "duo", "multi", "cool"].map((name) => [`pipelines/${name}.yaml`, openaiPipeline(name, name)]),
    );
    dir = await writeConfigDir(baseFiles({ sources: SOURCES, targets: TARGETS }, pipelines), EXECUTABLES);
    env.SVC_CONFIG_DIR = dir;
    const started = await startIngress(env);
    ingress = started.role;
    url = started.url;
    pool = new pg.Pool({ connectionString: database.url, max: 2 });
    await restartWorker();
  });

  afterAll(async () => {
    await worker?.stop();
    await ingress?.stop();
    await api.stop();
    await pool?.end();
    await database?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("a 401 kills the credential: dead row, `credential dead` logged, it leaves the queue and is never probed", async () => {
    api.answer("duo-key-1", { status: 401 });
    api.answer("duo-key-2", { status: 200 });
    const first = await postWebhook(url, "duo-hook", TOKEN, {});
    expect((await waitForTrigger(pool, first)).status).toBe("completed");
    const row = await cooldown("duo", "b1");
    expect(row).toMatchObject({ state: "dead", reason: "HTTP 401" });
    expect(row.dead_at).toBeInstanceOf(Date);
    expect(worker!.output.some((line) => line.includes("credential dead"))).toBe(true);
    expect(worker!.output.join("\n")).not.toContain("duo-key-1");
    const second = await postWebhook(url, "duo-hook", TOKEN, {});
    expect((await waitForTrigger(pool, second)).status).toBe("completed");
    await barrier();
    expect(api.count("duo-key-1")).toBe(1);
    expect(api.count("duo-key-2", "/chat/completions")).toBe(2);
  });

  it("a 403, a revoked token and an expired token each kill their credential", async () => {
    api.answer("multi-403", { status: 403 });
    api.answer("multi-revoked", { status: 401, errorCode: "token_revoked" });
    api.answer("multi-expired", { status: 400, errorCode: "token_expired" });
    api.answer("multi-good", { status: 200 });
    const id = await postWebhook(url, "multi-hook", TOKEN, {});
    expect((await waitForTrigger(pool, id)).status).toBe("completed");
    expect(await cooldown("multi", "c403")).toMatchObject({ state: "dead", reason: "HTTP 403" });
    expect(await cooldown("multi", "crevoked")).toMatchObject({ state: "dead" });
    expect(await cooldown("multi", "cexpired")).toMatchObject({ state: "dead", reason: "token expired" });
    expect(await cooldown("multi", "cgood")).toBeUndefined();
  });

  it("a runtime whose only credential is dead stops dispatching: its jobs wait, nothing fails, and it stays dead across a restart", async () => {
    api.answer("solo-key-1", { status: 401 });
    const first = await postWebhook(url, "solo-hook", TOKEN, {});
    await waitFor(async () => (await cooldown("solo", "a"))?.state === "dead", "solo/a to die");
    await worker!.waitForLog((l) => l.event === "lane.stopped" && l.lane === "svc-lane-solo", "lane.stopped");
    const second = await postWebhook(url, "solo-hook", TOKEN, {});
    await barrier();
    for (const id of [first, second]) {
      expect(await invocationStatus(id)).toEqual(["queued"]);
      expect((await waitForTrigger(pool, id, ["running"])).diagnostic).toBeNull();
    }
    await restartWorker();
    expect(worker!.logs.some((l) => l.event === "lane.started" && l.lane === "svc-lane-solo")).toBe(false);
    await barrier();
    expect(await cooldown("solo", "a")).toMatchObject({ state: "dead" });
    expect(api.count("solo-key-1")).toBe(1);
    expect(await invocationStatus(first)).toEqual(["queued"]);
  });

  it("operator action revives it: deleting the row alone changes nothing; new secret + restart makes it usable", async () => {
    const waiting = (
      await pool.query("SELECT id FROM svc.triggers WHERE source = 'solo-hook' ORDER BY created_at")
    ).rows.map((r) => r.id);
    await pool.query("DELETE FROM svc.credential_cooldowns WHERE target = 'solo' AND credential = 'a'");
    await barrier();
    expect(await invocationStatus(waiting[0])).toEqual(["queued"]);
    env.SOLO_KEY = "solo-key-2";
    api.answer("solo-key-2", { status: 200 });
    await restartWorker();
    for (const id of waiting) expect((await waitForTrigger(pool, id)).status).toBe("completed");
    expect(api.count("solo-key-1")).toBe(1);
  });

  it("a dead row is dropped at the first start-up more than 30 days after the failure, not before", async () => {
    await pool.query(
      "UPDATE svc.credential_cooldowns SET dead_at = now() - interval '31 days' WHERE target = 'duo' AND credential = 'b1'",
    );
    await pool.query(
      "UPDATE svc.credential_cooldowns SET dead_at = now() - interval '29 days' WHERE target = 'multi' AND credential = 'c403'",
    );
    await restartWorker();
    expect(await cooldown("duo", "b1")).toBeUndefined();
    expect(await cooldown("multi", "c403")).toMatchObject({ state: "dead" });
  });

  it("a 429 parks the credential until Retry-After; a throttled probe finds the cap lifted and it self-clears", async () => {
    api.answer("cool-key", { status: 429, retryAfter: "1" });
    const id = await postWebhook(url, "cool-hook", TOKEN, {});
    await waitFor(async () => (await cooldown("cool", "k"))?.state === "cooling", "cool/k to cool");
    const row = await cooldown("cool", "k");
    expect(row.until).toBeInstanceOf(Date);
    expect(row.dead_at).toBeNull();
    // the cooling row is written during the attempt; the run is handed back to its lane right after
    await waitFor(async () => (await invocationStatus(id))[0] === "queued", "the run to wait, queued");
    api.answer("cool-key", { status: 200 });
    expect((await waitForTrigger(pool, id)).status).toBe("completed");
    expect(api.count("cool-key", "/models")).toBeGreaterThanOrEqual(1);
    expect(await cooldown("cool", "k")).toBeUndefined();
  });

  it("cooling survives a restart; deleting the row changes nothing until the next restart", async () => {
    api.answer("cool-key", { status: 429, retryAfter: "3600" });
    const id = await postWebhook(url, "cool-hook", TOKEN, {});
    await waitFor(async () => (await cooldown("cool", "k"))?.state === "cooling", "cool/k to cool");
    api.answer("cool-key", { status: 200 });
    const requestsBefore = api.count("cool-key");
    await restartWorker();
    expect(worker!.logs.some((l) => l.event === "lane.started" && l.lane === "svc-lane-cool")).toBe(false);
    await pool.query("DELETE FROM svc.credential_cooldowns WHERE target = 'cool'");
    await barrier();
    expect(await invocationStatus(id)).toEqual(["queued"]);
    expect(api.count("cool-key")).toBe(requestsBefore);
    await restartWorker();
    expect((await waitForTrigger(pool, id)).status).toBe("completed");
  });
});
