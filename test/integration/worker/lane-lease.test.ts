import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type pg from "pg";
import type { PgBoss } from "pg-boss";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBoss } from "../../../db/boss.ts";
import type { ConfigSnapshot } from "../../../shared/config/types.ts";
import { LOCAL_LANE } from "../../../shared/queues.ts";
import { startWorker } from "../../../worker/main.ts";
import { ensureWorkerQueues } from "../../../worker/queue/lanes.ts";
import { LEASE_QUEUE, LOST_QUEUE } from "../../../worker/queue/run-leases.ts";
import type { TestDatabase } from "../../support/database.ts";
import {
  captureLogger,
  dispatchToLane,
  lineage,
  makeConfig,
  openTestBed,
  pipeline,
  type TestBed,
  waitFor,
  waitForTrigger,
} from "./helpers.ts";

/**
 * A run's first lane job is sent as its lease: the worker that claims the run keeps that job active
 * instead of taking a second job on the lease queue (worker/queue/run-leases.ts laneLease).
 */
describe("worker: the lane job a run is claimed through is its lease", () => {
  let bed: TestBed;
  let database: TestDatabase;
  let pool: pg.Pool;
  let boss: PgBoss;
  let dir: string;
  let config: ConfigSnapshot;
  const { logger } = captureLogger();

  beforeAll(async () => {
    bed = await openTestBed();
    ({ database, pool, dir } = bed);
    config = makeConfig(dir, {
      worker: { concurrency: 1, graceMs: 5_000 },
      pipelines: {
        // waits until the test lets it go, so the run is held while the test looks
        held: pipeline("held", {
          trigger: { webhook: ["hold-hook"], codehost: [], tracker: [] },
          setup: [{ run: `while [ ! -f "${join(dir, "go")}" ]; do sleep 0.05; done` }],
        }),
      },
    });
    boss = await startBoss({ url: database.url, supervise: false });
    await ensureWorkerQueues(boss, config);
  });

  afterAll(async () => {
    await boss?.stop({ graceful: false });
    await bed?.close();
  });

  /** A trigger dispatched with no free slot: its run waits on its lane; its invocation id. */
  async function runOnLane(): Promise<{ trigger: string; invocation: string }> {
    const trigger = await dispatchToLane({ pool, boss, config, logger }, { source: "hold-hook" });
    const { invocations } = await lineage(pool, trigger);
    return { trigger, invocation: invocations[0].id };
  }

  const jobsOf = async (invocation: string) =>
    (
      await pool.query(
        `SELECT name, state, data, retry_limit, dead_letter, heartbeat_seconds
           FROM pgboss.job WHERE data->>'invocationId' = $1 ORDER BY created_on`,
        [invocation],
      )
    ).rows;

  const running = (invocation: string, attempts: number) =>
    waitFor(async () => {
      const { rows } = await pool.query("SELECT status, attempts FROM svc.invocations WHERE id = $1", [
        invocation,
      ]);
      return rows[0].status === "running" && rows[0].attempts === attempts ? true : undefined;
    }, `invocation ${invocation} to run its attempt ${attempts}`);

  it("is sent as a lease, stays active while the run is held, and is completed with the run's end", async () => {
    const { trigger, invocation } = await runOnLane();
    expect(await jobsOf(invocation)).toEqual([
      {
        name: LOCAL_LANE,
        state: "created",
        data: { invocationId: invocation, attempt: 1 },
        retry_limit: 0,
        dead_letter: LOST_QUEUE,
        heartbeat_seconds: 10,
      },
    ]);
    const worker = await startWorker({ config, databaseUrl: database.url, logger, heartbeatMs: 500 });
    try {
      await running(invocation, 1);
      // held: its lane job is its lease, and no lease was taken beside it
      expect((await jobsOf(invocation)).map((job) => [job.name, job.state])).toEqual([
        [LOCAL_LANE, "active"],
      ]);
      await writeFile(join(dir, "go"), "");
      expect((await waitForTrigger(pool, trigger)).status).toBe("completed");
      expect((await jobsOf(invocation)).map((job) => [job.name, job.state])).toEqual([
        [LOCAL_LANE, "completed"],
      ]);
    } finally {
      await worker.stop(1_000);
    }
  }, 60_000);

  it("failed by pg-boss (missed heartbeats), it stops the run and the reaper queues the run again once", async () => {
    await pool.query("DELETE FROM pgboss.job WHERE name = $1", [LOST_QUEUE]);
    await rm(join(dir, "go"), { force: true });
    const { trigger, invocation } = await runOnLane();
    const worker = await startWorker({
      ...{ config, databaseUrl: database.url, logger },
      // only the failed lease can say the run is lost: its heartbeat stays fresh meanwhile
      ...{ heartbeatMs: 500, staleAfterMs: 3_600_000, reapIntervalMs: 200 },
    });
    try {
      await running(invocation, 1);
      const { rows } = await pool.query(
        "SELECT id, retry_count FROM pgboss.job WHERE name = $1 AND data->>'invocationId' = $2",
        [LOCAL_LANE, invocation],
      );
      // what pg-boss's monitor does to a lease that missed its heartbeats: fail it, for good
      await boss.fail(LOCAL_LANE, { id: rows[0].id, retryCount: rows[0].retry_count });
      // the worker finds its lease failed and stops; the reaper queues the run again, and the
      // second claim (a job without an attempt) holds a lease of the lease queue
      await running(invocation, 2);
      await writeFile(join(dir, "go"), "");
      expect((await waitForTrigger(pool, trigger)).status).toBe("completed");
      const { invocations } = await lineage(pool, trigger);
      expect(invocations.map((row) => [row.status, row.attempts])).toEqual([["completed", 2]]);
      const jobs = (await jobsOf(invocation)).map((job) => [job.name, job.state, job.data.attempt]);
      expect(jobs).toEqual([
        [LOCAL_LANE, "failed", 1],
        [LOST_QUEUE, "completed", 1],
        [LOCAL_LANE, "completed", undefined],
        [LEASE_QUEUE, "completed", undefined],
      ]);
    } finally {
      await worker.stop(1_000);
    }
  }, 60_000);
});
