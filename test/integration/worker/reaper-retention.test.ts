import { existsSync } from "node:fs";
import { mkdir, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type pg from "pg";
import type { PgBoss } from "pg-boss";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureQueue, startBoss } from "../../../db/boss.ts";
import { getInvocationPipeline, insertQueuedRuns } from "../../../db/invocations.ts";
import { insertNote } from "../../../db/notes.ts";
import { withTransaction } from "../../../db/transaction.ts";
import { newId } from "../../../shared/ids.ts";
import { CredentialCooldowns } from "../../../worker/credentials/cooldowns.ts";
import { CredentialSecrets } from "../../../worker/credentials/secrets.ts";
import { LOCAL_LANE } from "../../../worker/queue/lanes.ts";
import { reapStaleInvocations } from "../../../worker/queue/reaper.ts";
import { sweepWorkspaces } from "../../../worker/queue/retention.ts";
import {
  ensureLeaseQueues,
  instant,
  LEASE_QUEUE,
  LOST_QUEUE,
  takeLeases,
  touchLease,
} from "../../../worker/queue/run-leases.ts";
import type { TestDatabase } from "../../support/database.ts";
import { captureLogger, fire, makeConfig, openTestBed, pipeline, type TestBed } from "./helpers.ts";

describe("reaper and retention sweeper", () => {
  let bed: TestBed;
  let database: TestDatabase;
  let pool: pg.Pool;
  let boss: PgBoss;
  let dir: string;

  beforeAll(async () => {
    bed = await openTestBed();
    ({ database, pool, dir } = bed);
    boss = await startBoss({ url: database.url, supervise: false });
    // the queues a worker creates at start-up; this test reaps without a running worker
    await ensureQueue(boss, LOCAL_LANE, { notify: false });
    await ensureLeaseQueues(boss, {});
  });
  afterAll(async () => {
    await boss?.stop({ graceful: false });
    await bed?.close();
  });

  async function staleRun(attempts: number): Promise<{ trigger: string; invocation: string }> {
    const trigger = await fire(pool, boss, { kind: "manual", source: "p", eventName: "p" });
    await pool.query("UPDATE svc.triggers SET status = 'running' WHERE id = $1", [trigger]);
    const workload = newId("workload");
    const invocation = newId("invocation");
    await insertQueuedRuns(pool, [
      {
        workloadId: workload,
        triggerId: trigger,
        pipeline: "p",
        pipelineVersion: "1.0.0",
        owner: null,
        workspace: dir,
        invocationId: invocation,
        target: null,
      },
    ]);
    await pool.query(
      "UPDATE svc.invocations SET status = 'running', worker_id = 'gone', attempts = $2, heartbeat_at = now() - interval '1 hour' WHERE id = $1",
      [invocation, attempts],
    );
    return { trigger, invocation };
  }

  it("requeues a lost run with attempts left, and fails it with worker_lost once they are used up", async () => {
    const config = makeConfig(dir, { pipelines: { p: pipeline("p") } });
    const { logger } = captureLogger();
    const cooldowns = await CredentialCooldowns.load(pool, logger);
    const secrets = await CredentialSecrets.resolve(config, pool, {});
    const retry = await staleRun(1);
    const lost = await staleRun(3);
    const reaped = await reapStaleInvocations({
      pool,
      boss,
      config,
      cooldowns,
      secrets,
      logger,
      staleAfterMs: 1000,
      maxAttempts: 3,
    });
    expect(reaped).toBe(2);
    const rows = async (id: string) =>
      (await pool.query("SELECT * FROM svc.invocations WHERE id = $1", [id])).rows[0];
    expect(await rows(retry.invocation)).toMatchObject({ status: "queued", worker_id: null });
    const jobs = await pool.query(
      "SELECT count(*)::int AS n FROM pgboss.job WHERE data->>'invocationId' = $1",
      [retry.invocation],
    );
    expect(jobs.rows[0].n).toBe(1);
    expect(await rows(lost.invocation)).toMatchObject({
      status: "failed",
      diagnostic: { code: "worker_lost" },
    });
    const trigger = (await pool.query("SELECT * FROM svc.triggers WHERE id = $1", [lost.trigger])).rows[0];
    expect(trigger).toMatchObject({ status: "error", diagnostic: { code: "worker_lost" } });
    const running = await pool.query("SELECT id FROM svc.invocations WHERE status = 'running'");
    expect(running.rows).toEqual([]);
  });

  it("a run whose pg-boss lease failed is queued again once; a lease of another attempt changes nothing", async () => {
    const config = makeConfig(dir, { pipelines: { p: pipeline("p") } });
    const { logger } = captureLogger();
    const cooldowns = await CredentialCooldowns.load(pool, logger);
    const secrets = await CredentialSecrets.resolve(config, pool, {});
    // held by worker "gone" at attempt 1, its heartbeat fresh: only the lease can say it is lost
    const held = await staleRun(1);
    await pool.query("UPDATE svc.invocations SET heartbeat_at = now() WHERE id = $1", [held.invocation]);
    const takenAt = instant();
    const leases = await withTransaction(pool, (client) =>
      takeLeases(
        boss,
        client,
        [
          { invocationId: held.invocation, workerId: "gone", attempts: 1 },
          // an earlier attempt's lease of the same run: when it fails, the run is not that attempt's
          { invocationId: `${held.invocation}-earlier`, workerId: "gone", attempts: 0 },
        ],
        10,
        takenAt,
      ),
    );
    const lease = leases.get(held.invocation)!;
    const earlier = leases.get(`${held.invocation}-earlier`)!;
    expect(await touchLease(boss, lease)).toBe(true);
    const deps = { pool, boss, config, cooldowns, secrets, logger, staleAfterMs: 3_600_000, maxAttempts: 3 };
    expect(await reapStaleInvocations(deps)).toBe(0);
    // what pg-boss's monitor does to a lease that missed its heartbeats: fail it (retryLimit 0, so
    // for good), which moves it to the lost-lease queue
    await boss.fail(LEASE_QUEUE, [lease, earlier]);
    expect(await touchLease(boss, lease)).toBe(false);
    expect(await reapStaleInvocations(deps)).toBe(1);
    const row = (await pool.query("SELECT * FROM svc.invocations WHERE id = $1", [held.invocation])).rows[0];
    expect(row).toMatchObject({ status: "queued", worker_id: null, attempts: 1 });
    const lost = await boss.fetch(LOST_QUEUE, { batchSize: 10 });
    expect(lost).toEqual([]);
    // reaped once: the next sweep finds nothing
    expect(await reapStaleInvocations(deps)).toBe(0);
  });

  it("a queued run whose job is gone gets a fresh job; one with a live job does not get a second", async () => {
    const config = makeConfig(dir, { pipelines: { p: pipeline("p") } });
    const { logger } = captureLogger();
    const cooldowns = await CredentialCooldowns.load(pool, logger);
    const secrets = await CredentialSecrets.resolve(config, pool, {});
    const queuedRun = async () => {
      const { trigger, invocation } = await staleRun(0);
      await pool.query(
        "UPDATE svc.invocations SET status = 'queued', worker_id = NULL, heartbeat_at = NULL, updated_at = now() - interval '1 hour' WHERE id = $1",
        [invocation],
      );
      return { trigger, invocation };
    };
    const orphan = await queuedRun();
    const covered = await queuedRun();
    await boss.send(LOCAL_LANE, { invocationId: covered.invocation });
    const jobsFor = async (id: string) =>
      (
        await pool.query(
          "SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1 AND data->>'invocationId' = $2",
          [LOCAL_LANE, id],
        )
      ).rows[0].n;
    expect(await jobsFor(orphan.invocation)).toBe(0);
    await reapStaleInvocations({
      pool,
      boss,
      config,
      cooldowns,
      secrets,
      logger,
      staleAfterMs: 1000,
      maxAttempts: 3,
    });
    expect(await jobsFor(orphan.invocation)).toBe(1);
    expect(await jobsFor(covered.invocation)).toBe(1);
    // re-sent just now: the next pass leaves it alone
    await reapStaleInvocations({
      pool,
      boss,
      config,
      cooldowns,
      secrets,
      logger,
      staleAfterMs: 1000,
      maxAttempts: 3,
    });
    expect(await jobsFor(orphan.invocation)).toBe(1);
  });

  it("removes old checkouts and transcripts by their tiers (transcripts clamped to the checkout tier), never notes", async () => {
    const day = 24 * 60 * 60;
    const make = async (run: string, ageDays: number) => {
      const checkout = join(dir, "workspaces", run, "checkout");
      const logs = join(dir, "workspaces", run, "inv_x", "logs");
      await mkdir(checkout, { recursive: true });
      await mkdir(logs, { recursive: true });
      await writeFile(join(logs, "transcript.log"), "t");
      const when = Date.now() / 1000 - ageDays * day;
      await utimes(checkout, when, when);
      await utimes(join(logs, "transcript.log"), when, when);
      return { checkout, transcript: join(logs, "transcript.log") };
    };
    const fresh = await make("run_fresh", 1);
    const middle = await make("run_middle", 12);
    const old = await make("run_old", 40);
    await insertNote(pool, {
      id: newId("note"),
      invocationId: null,
      pipeline: "p",
      title: "s",
      body: "keep me",
    });
    // transcriptRetentionDays 5 is clamped up to the checkout tier of 10
    const config = makeConfig(dir, {
      workspaces: {
        checkoutRetentionDays: 10,
        transcriptRetentionDays: 5,
        repoCache: { maxSizeBytes: 20 * 1024 ** 3 },
      },
    });
    const result = await sweepWorkspaces(pool, config);
    expect(existsSync(fresh.checkout) && existsSync(fresh.transcript)).toBe(true);
    expect(existsSync(middle.checkout)).toBe(false);
    expect(existsSync(middle.transcript)).toBe(false);
    expect(existsSync(old.checkout) || existsSync(old.transcript)).toBe(false);
    expect(result).toMatchObject({ checkouts: 2, transcripts: 2 });
    const notes = await pool.query("SELECT body FROM svc.notes");
    expect(notes.rows).toEqual([{ body: "keep me" }]);
  });

  // last: the run it makes stays stale, and the reaper tests above count the stale runs they reap
  it("reads the pipeline of an invocation's workload (for an orchestrated task's maxParallel); none for an unknown id", async () => {
    const { invocation } = await staleRun(1);
    expect(await getInvocationPipeline(pool, invocation)).toBe("p");
    expect(await getInvocationPipeline(pool, newId("invocation"))).toBeUndefined();
  });
});
