import pg from "pg";
import type { PgBoss } from "pg-boss";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBoss } from "../../../db/boss.ts";
import type { ConfigSnapshot } from "../../../shared/config/types.ts";
import { type RunningWorker, startWorker } from "../../../worker/main.ts";
import { ensureWorkerQueues } from "../../../worker/queue/lanes.ts";
import type { TestDatabase } from "../../support/database.ts";
import {
  captureLogger,
  dispatchToLane,
  fire,
  lineage,
  makeConfig,
  openTestBed,
  pipeline,
  type TestBed,
  waitFor,
  waitForTrigger,
} from "./helpers.ts";

/**
 * Issue 11: a thrown error while a run starts does not lose a slot. Each case runs a worker with
 * `concurrency: 1`, makes one run's start throw, then fires more triggers: a lost slot would leave
 * the worker running nothing ever again, so those triggers completing is the proof that the slot
 * came back.
 *
 * The throw: the test holds an ACCESS EXCLUSIVE lock on a table so a statement waits, then cancels
 * that statement with pg_cancel_backend, as a statement_timeout or an operator would: it throws
 * `canceling statement due to user request`. Two places: the lane claim (worker/queue/claim-loop.ts),
 * whose one statement also reads the run's workload and trigger, before a slot is handed to the
 * run; and the run's first write (its setup step's task row), inside the run.
 */
describe("worker: a thrown error while a run starts gives its slot back", () => {
  let bed: TestBed;
  let database: TestDatabase;
  let pool: pg.Pool;
  let boss: PgBoss;
  let config: ConfigSnapshot;
  let dir: string;
  const { logger } = captureLogger();

  beforeAll(async () => {
    bed = await openTestBed();
    ({ database, pool, dir } = bed);
    config = makeConfig(dir, {
      worker: { concurrency: 1, graceMs: 5_000 },
      pipelines: {
        notes: pipeline("notes", {
          trigger: { webhook: ["deploy-hook"], codehost: [], tracker: [] },
          setup: [{ run: 'printf "%s" "$PAYLOAD_JSON" > "$SURFACE_DIR/payload.json"' }],
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

  /** A trigger dispatched with no worker holding a slot: its run waits on its lane for any worker. */
  const runOnLane = (note: string) =>
    dispatchToLane({ pool, boss, config, logger }, { source: "deploy-hook", payload: { note } });

  /**
   * Starts a one-slot worker while `table` is locked, waits for a backend blocked on `query` (the
   * claim's statement, or the run's first write) and cancels that statement, then lets go of the lock.
   */
  async function startWorkerFailingStatement(
    table: string,
    query: string,
    options: { staleAfterMs?: number; reapIntervalMs?: number } = {},
    workerLogger = logger,
  ): Promise<RunningWorker> {
    const blocker = new pg.Client({ connectionString: database.url });
    await blocker.connect();
    let worker: RunningWorker | undefined;
    try {
      await blocker.query("BEGIN");
      await blocker.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
      worker = await startWorker({
        ...{ config, databaseUrl: database.url, logger: workerLogger },
        ...{ heartbeatMs: 500, ...options },
      });
      const blocked = async () => {
        const { rows } = await pool.query<{ pid: number }>(
          `SELECT pid FROM pg_stat_activity
            WHERE datname = current_database() AND pid <> pg_backend_pid()
              AND wait_event_type = 'Lock' AND strpos(query, $1) > 0`,
          [query],
        );
        return rows[0]?.pid;
      };
      const pid = await waitFor(blocked, `a statement on ${table} to wait on the lock`);
      const cancelled = await pool.query<{ ok: boolean }>("SELECT pg_cancel_backend($1) AS ok", [pid]);
      expect(cancelled.rows[0]!.ok).toBe(true);
      return worker;
    } catch (error) {
      await worker?.stop(1_000);
      throw error;
    } finally {
      await blocker.query("ROLLBACK").catch(() => {}); // the session ends below: its lock goes either way
      await blocker.end();
    }
  }

  /** Fires triggers one after the other; each must run to completion on the worker's one slot. */
  async function expectLaterTriggersRun(): Promise<void> {
    for (const note of ["after-1", "after-2", "after-3"]) {
      const id = await fire(pool, boss, {
        kind: "webhook",
        source: "deploy-hook",
        eventName: "deploy-hook",
        payload: { note },
      });
      const trigger = await waitForTrigger(pool, id);
      expect(trigger.status).toBe("completed");
      const after = await lineage(pool, id);
      expect(after.invocations.map((invocation) => invocation.status)).toEqual(["completed"]);
      expect(after.tasks.map((task) => task.status)).toEqual(["completed"]);
    }
  }

  // the bounds are past waitFor's own, so a lost slot fails naming the trigger that never ran
  it("a run whose first write throws is recorded failed, and the next triggers run on the one slot", async () => {
    const poisoned = await runOnLane("task-write-fails");
    const worker = await startWorkerFailingStatement("svc.tasks", "INSERT INTO svc.tasks");
    try {
      // the failing run ends recorded, with the error it threw, not held
      const failed = await waitForTrigger(pool, poisoned);
      expect(failed.status).toBe("error");
      const { invocations, tasks } = await lineage(pool, poisoned);
      expect(invocations).toHaveLength(1);
      expect(tasks).toHaveLength(0);
      expect(invocations[0].status).toBe("failed");
      expect(invocations[0].diagnostic.code).toBe("agent_failed");
      expect(invocations[0].diagnostic.message).toMatch(/canceling statement/);
      expect(failed.diagnostic).toEqual({ code: "agent_failed", message: invocations[0].diagnostic.message });
      await expectLaterTriggersRun();
    } finally {
      await worker.stop(1_000);
    }
  }, 60_000);

  // the claim's transaction rolls back: its job stays on the lane, its slot comes back, and the
  // next round (at the latest the backstop poll) claims the run again
  it("a lane claim whose read throws gives its slot back, and the run is claimed again", async () => {
    const poisoned = await runOnLane("claim-read-fails");
    const { lines, logger: claimLogger } = captureLogger();
    const worker = await startWorkerFailingStatement("svc.workloads", "FROM claimed c", {}, claimLogger);
    try {
      const ended = await waitForTrigger(pool, poisoned);
      expect(ended.status).toBe("completed");
      const { invocations } = await lineage(pool, poisoned);
      expect(invocations.map((invocation) => [invocation.status, invocation.attempts])).toEqual([
        ["completed", 1],
      ]);
      expect(lines.some((line) => line.includes('"event":"worker.fetch_failed"'))).toBe(true);
      await expectLaterTriggersRun();
    } finally {
      await worker.stop(1_000);
    }
  }, 60_000);
});
