import { randomUUID } from "node:crypto";
import { chmod, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import type pg from "pg";
import type { PgBoss } from "pg-boss";
import { afterAll, beforeAll, inject } from "vitest";
import { transactionDb, wakeWorkers } from "../../../db/boss.ts";
import { createPool } from "../../../db/connect.ts";
import { insertQueuedRuns } from "../../../db/invocations.ts";
import { migrate } from "../../../db/migrate.ts";
import { withTransaction } from "../../../db/transaction.ts";
import { insertTrigger, type TriggerKind } from "../../../db/triggers.ts";
import type { ConfigSnapshot, Target } from "../../../shared/config/types.ts";
import { newId } from "../../../shared/ids.ts";
import { createLogger, type Logger } from "../../../shared/logger.ts";
import { DISPATCH_QUEUE } from "../../../shared/queues.ts";
import { CredentialCooldowns } from "../../../worker/credentials/cooldowns.ts";
import { CredentialSecrets } from "../../../worker/credentials/secrets.ts";
import { dispatchTriggers } from "../../../worker/queue/dispatch.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { waitFor } from "../../support/wait-for.ts";

export { pipeline } from "../../support/pipeline.ts";
export { waitFor };

export function makeConfig(dir: string, overrides: Partial<ConfigSnapshot> = {}): ConfigSnapshot {
  return {
    dir,
    server: { host: "127.0.0.1", port: 0 },
    webhooks: { maxBodyBytes: 1_000_000, sources: {} },
    targets: {},
    ask: { targets: [] },
    knowledge: { retrieval: { engine: "local", rewrite: { targets: [] } } },
    repos: {},
    channels: { chat: { bots: {} } },
    queue: {},
    hostTools: {},
    auth: null,
    worker: { concurrency: 2, graceMs: 5_000 },
    workspaces: {
      checkoutRetentionDays: 30,
      transcriptRetentionDays: 90,
      repoCache: { maxSizeBytes: 20 * 1024 ** 3 },
    },
    pipelines: {},
    agents: {
      helper: {
        name: "helper",
        description: "helps",
        policies: ["short"],
        persona: "You help.",
        file: "agents/helper/PERSONA.md",
      },
    },
    skills: {},
    policies: {
      short: { name: "short", description: "be short", body: "Be short.", file: "policies/short.md" },
    },
    members: [],
    ...overrides,
  };
}

export function commandTarget(name: string, command: string[], timeoutMs = 20_000): Target {
  return { name, runtime: "command", command, timeoutMs, credentials: [] };
}

/** What a worker test runs on: a migrated database of its own, a pool on it, a configuration directory. */
export interface TestBed {
  database: TestDatabase;
  pool: pg.Pool;
  dir: string;
  /** ends the pool, drops the database and removes the directory */
  close(): Promise<void>;
}

export async function openTestBed(): Promise<TestBed> {
  const database = await createTestDatabase(inject("adminDatabaseUrl"));
  const pool = createPool(database.url);
  await migrate(pool);
  const dir = await configDir();
  return {
    database,
    pool,
    dir,
    close: async () => {
      await pool.end();
      await database.drop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The test bed of the describe block that calls this: opened before its tests, closed after them.
 * Its fields are read inside the tests, once it is open.
 */
export function describeTestBed(): Pick<TestBed, "database" | "pool" | "dir"> {
  let bed: TestBed | undefined;
  beforeAll(async () => {
    bed = await openTestBed();
  });
  afterAll(async () => {
    await bed?.close();
  });
  const open = (): TestBed => {
    if (!bed) throw new Error("the test bed is read before its beforeAll opened it");
    return bed;
  };
  return {
    get database() {
      return open().database;
    },
    get pool() {
      return open().pool;
    },
    get dir() {
      return open().dir;
    },
  };
}

/** A temporary configuration directory with an executable agent script in it. */
export async function configDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "svc-worker-"));
  await mkdir(join(dir, "bin"), { recursive: true });
  return dir;
}

export async function writeScript(path: string, body: string): Promise<string> {
  await writeFile(path, body);
  await chmod(path, 0o755);
  return path;
}

/** What the ingress does: a trigger row and its dispatch job, committed together. */
export async function fire(
  pool: pg.Pool,
  boss: PgBoss,
  trigger: { kind: TriggerKind; source: string; eventName: string; payload?: unknown; replayOf?: string },
): Promise<string> {
  const id = await withTransaction(pool, async (client) => {
    const { id } = await insertTrigger(client, {
      kind: trigger.kind,
      source: trigger.source,
      eventName: trigger.eventName,
      deliveryId: null,
      payloadJson: JSON.stringify(trigger.payload ?? {}),
      replayOf: trigger.replayOf ?? null,
    });
    await boss.send(DISPATCH_QUEUE, { triggerId: id }, { db: transactionDb(client) });
    return id;
  });
  wakeWorkers(boss, DISPATCH_QUEUE);
  return id;
}

export async function waitForTrigger(
  pool: pg.Pool,
  id: string,
  statuses = ["completed", "error", "discarded"],
) {
  return waitFor(
    async () => {
      const { rows } = await pool.query("SELECT * FROM svc.triggers WHERE id = $1", [id]);
      return rows[0] && statuses.includes(rows[0].status) ? rows[0] : undefined;
    },
    `trigger ${id} to reach ${statuses.join("|")}`,
  );
}

export function captureLogger(): { logger: Logger; lines: string[] } {
  const stream = new PassThrough();
  const lines: string[] = [];
  stream.on("data", (chunk: Buffer) => lines.push(...chunk.toString("utf8").split("\n").filter(Boolean)));
  return { logger: createLogger({ role: "worker", format: "json", level: "debug", stream }), lines };
}

/** The trigger's whole lineage read in one snapshot, so a dispatch committing mid-read never yields invocations without their workload. */
export async function lineage(pool: pg.Pool, triggerId: string) {
  const client = await pool.connect();
  try {
    await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    const workloads = (await client.query("SELECT * FROM svc.workloads WHERE trigger_id = $1", [triggerId]))
      .rows;
    const invocations = (
      await client.query(
        "SELECT i.* FROM svc.invocations i JOIN svc.workloads w ON w.id = i.workload_id WHERE w.trigger_id = $1",
        [triggerId],
      )
    ).rows;
    const ids = invocations.map((i) => i.id);
    const tasks = (
      await client.query("SELECT * FROM svc.tasks WHERE invocation_id = ANY($1) ORDER BY seq", [ids])
    ).rows;
    const artifacts = (
      await client.query("SELECT * FROM svc.artifacts WHERE invocation_id = ANY($1) ORDER BY name", [ids])
    ).rows;
    await client.query("COMMIT");
    return { workloads, invocations, tasks, artifacts };
  } finally {
    client.release();
  }
}

/** Whether any process of the group `pgid` is still alive. */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * A manual trigger with `count` queued runs, written as dispatch writes them, without a lane job:
 * for tests that claim or end runs themselves. Returns the trigger's id and the runs' invocation ids.
 */
export async function queuedRunsOfOneTrigger(
  bed: Pick<TestBed, "pool" | "dir">,
  count: number,
  payloadJson = "{}",
): Promise<{ trigger: string; runs: string[] }> {
  const { id: trigger } = await insertTrigger(bed.pool, {
    kind: "manual",
    source: "p",
    eventName: "p",
    deliveryId: null,
    payloadJson,
  });
  const runs = Array.from({ length: count }, () => newId("invocation"));
  await insertQueuedRuns(
    bed.pool,
    runs.map((invocationId) => ({
      workloadId: newId("workload"),
      triggerId: trigger,
      pipeline: "p",
      pipelineVersion: "1.0.0",
      owner: null,
      workspace: bed.dir,
      invocationId,
      target: null,
    })),
  );
  return { trigger, runs };
}

/**
 * A webhook trigger dispatched by nobody holding a slot: its run waits on its lane, with its lane
 * job, for any worker to claim. Returns the trigger's id.
 */
export async function dispatchToLane(
  bed: { pool: pg.Pool; boss: PgBoss; config: ConfigSnapshot; logger: Logger },
  trigger: { source: string; payload?: unknown },
): Promise<string> {
  const { pool, boss, config, logger } = bed;
  const deps = {
    ...{ pool, boss, config, logger },
    leaseSeconds: 10,
    cooldowns: await CredentialCooldowns.load(pool, logger),
    secrets: await CredentialSecrets.resolve(config, pool, {}),
  };
  return withTransaction(pool, async (client) => {
    const { id } = await insertTrigger(client, {
      kind: "webhook",
      source: trigger.source,
      eventName: trigger.source,
      deliveryId: null,
      payloadJson: JSON.stringify(trigger.payload ?? {}),
    });
    // no dispatch job was sent for it: the batch's completion of this made-up job id is a no-op
    const job = { id: randomUUID(), data: { triggerId: id } };
    const [dispatched] = await dispatchTriggers(deps, client, [job], { workerId: "nobody", left: 0 });
    const outcome = dispatched!.outcome;
    if (outcome.kind !== "dispatched" || outcome.claimed)
      throw new Error(`trigger ${id} was not dispatched onto its lane: ${outcome.kind}`);
    return id;
  });
}
