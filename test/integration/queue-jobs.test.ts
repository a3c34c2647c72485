import type pg from "pg";
import type { PgBoss } from "pg-boss";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ensureLaneQueue, startBoss } from "../../db/boss.ts";
import { createPool } from "../../db/connect.ts";
import { migrate } from "../../db/migrate.ts";
import {
  countFailedSince,
  countQueueStates,
  findOrphanedInvocations,
  findOrphanedTriggers,
  listQueueJobs,
  purgeFailedJobs,
} from "../../db/queue-jobs.ts";
import { DISPATCH_QUEUE, laneQueue } from "../../shared/queues.ts";
import { createTestDatabase, type TestDatabase } from "../support/database.ts";

/**
 * db/queue-jobs.ts is the one module that reads pg-boss's job table with SQL. Every job here is made
 * through pg-boss's public API (send, fetch, complete, fail); the assertions pin what that module
 * reads back (table, columns, state names, start_after, retry counts). An upgrade of pg-boss that
 * changes any of it fails this file, not production.
 */
describe("pg-boss's job table as db/queue-jobs.ts reads it", () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  let boss: PgBoss;
  const lane = laneQueue("contract");

  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    pool = createPool(database.url);
    await migrate(pool);
    boss = await startBoss({ url: database.url, max: 2, supervise: false });
    await ensureLaneQueue(boss, lane, {});
    await boss.updateQueue(lane, { retryLimit: 0 });
  });

  afterAll(async () => {
    await boss?.stop({ graceful: false, close: true });
    await pool?.end();
    await database?.drop();
  });

  it("sees waiting, delayed, active and failed jobs in the states pg-boss gives them", async () => {
    await boss.send(lane, { invocationId: "inv_waiting" });
    await boss.send(lane, { invocationId: "inv_delayed" }, { startAfter: 3600 });
    const [active] = await boss.fetch<{ invocationId: string }>(lane, { batchSize: 1 });
    expect(active?.data.invocationId).toBe("inv_waiting");
    await boss.send(lane, { invocationId: "inv_failed" });
    const [failing] = await boss.fetch(lane, { batchSize: 1 });
    await boss.fail(lane, failing!.id);
    expect(await countQueueStates(pool)).toEqual({ active: 1, waiting: 0, delayed: 1, failed: 1 });
    const [failedJob] = await listQueueJobs(pool, "failed", { limit: 10, offset: 0 });
    expect(failedJob).toMatchObject({
      task: "invoke",
      lane: "contract",
      invocation: "inv_failed",
      maxAttempts: 1,
    });
    expect(failedJob!.attempts).toBe(1);
    const [delayed] = await listQueueJobs(pool, "delayed", { limit: 10, offset: 0 });
    expect(delayed?.invocation).toBe("inv_delayed");
    expect(await countFailedSince(pool, new Date(Date.now() - 60_000))).toBe(1);
    await boss.complete(lane, active!.id);
    expect((await countQueueStates(pool)).active).toBe(0);
    expect(await purgeFailedJobs(pool, new Date(Date.now() + 60_000))).toBe(1);
    expect((await countQueueStates(pool)).failed).toBe(0);
  });

  it("tells a trigger or invocation with a live job from one without", async () => {
    await pool.query(
      `INSERT INTO svc.triggers (id, kind, source, event_name, status, payload, created_at) VALUES
         ('trg_livejobaaaaaaaaaaaaaa', 'webhook', 'h', 'h', 'queued', '{}', now() - interval '1 hour'),
         ('trg_nojobaaaaaaaaaaaaaaaa', 'webhook', 'h', 'h', 'queued', '{}', now() - interval '1 hour');
       INSERT INTO svc.workloads (id, trigger_id, pipeline, status, workspace) VALUES
         ('run_contractaaaaaaaaaaaaa', 'trg_livejobaaaaaaaaaaaaaa', 'p', 'open', '/tmp/x');
       INSERT INTO svc.invocations (id, workload_id, status, target, created_at) VALUES
         ('inv_livejobaaaaaaaaaaaaaa', 'run_contractaaaaaaaaaaaaa', 'queued', 'contract', now() - interval '1 hour'),
         ('inv_nojobaaaaaaaaaaaaaaaa', 'run_contractaaaaaaaaaaaaa', 'queued', NULL, now() - interval '1 hour')`,
    );
    await boss.send(DISPATCH_QUEUE, { triggerId: "trg_livejobaaaaaaaaaaaaaa" });
    await boss.send(lane, { invocationId: "inv_livejobaaaaaaaaaaaaaa" }, { startAfter: 3600 });
    // a job of one of its orchestrated tasks names the invocation but does not run it
    await boss.send(
      lane,
      { invocationId: "inv_nojobaaaaaaaaaaaaaaaa", taskId: "tsk_x" },
      { startAfter: 3600 },
    );
    expect(await findOrphanedTriggers(pool, 60)).toEqual(["trg_nojobaaaaaaaaaaaaaaaa"]);
    expect(await findOrphanedInvocations(pool, 60)).toEqual([
      { id: "inv_nojobaaaaaaaaaaaaaaaa", target: null, concurrency_group: null, shadow: false },
    ]);
    // once its job is gone, the invocation is an orphan too
    const [job] = await boss.findJobs(lane, { data: { invocationId: "inv_livejobaaaaaaaaaaaaaa" } });
    await boss.deleteJob(lane, job!.id);
    expect((await findOrphanedInvocations(pool, 60)).map((row) => row.id).sort()).toEqual([
      "inv_livejobaaaaaaaaaaaaaa",
      "inv_nojobaaaaaaaaaaaaaaaa",
    ]);
  });

  it("leaves a run waiting for its concurrency group's running one without a job, until that one ends", async () => {
    await pool.query(
      `INSERT INTO svc.triggers (id, kind, source, event_name, status, payload, created_at) VALUES
         ('trg_groupaaaaaaaaaaaaaaaa', 'webhook', 'h', 'h', 'running', '{}', now() - interval '1 hour');
       INSERT INTO svc.workloads (id, trigger_id, pipeline, status, workspace) VALUES
         ('run_groupaaaaaaaaaaaaaaaa', 'trg_groupaaaaaaaaaaaaaaaa', 'p', 'open', '/tmp/x');
       INSERT INTO svc.invocations (id, workload_id, status, worker_id, heartbeat_at, concurrency_group, created_at) VALUES
         ('inv_groupholderaaaaaaaaaa', 'run_groupaaaaaaaaaaaaaaaa', 'running', 'w', now(), 'pipeline:p', now() - interval '1 hour'),
         ('inv_groupwaitingaaaaaaaaa', 'run_groupaaaaaaaaaaaaaaaa', 'queued', NULL, NULL, 'pipeline:p', now() - interval '1 hour')`,
    );
    const orphans = async () =>
      (await findOrphanedInvocations(pool, 60)).filter((row) => row.concurrency_group === "pipeline:p");
    expect(await orphans()).toEqual([]);
    // the holder ended and nobody handed the group on (its worker died first): the reconcile rule does
    await pool.query(
      "UPDATE svc.invocations SET status = 'completed' WHERE id = 'inv_groupholderaaaaaaaaaa'",
    );
    expect(await orphans()).toEqual([
      { id: "inv_groupwaitingaaaaaaaaa", target: null, concurrency_group: "pipeline:p", shadow: false },
    ]);
  });
});
