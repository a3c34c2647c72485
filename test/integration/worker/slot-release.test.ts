import { randomUUID } from "node:crypto";
import pg from "pg";
import type { PgBoss } from "pg-boss";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureLaneQueue, startBoss } from "../../../db/boss.ts";
import { withTransaction } from "../../../db/transaction.ts";
import { insertTrigger } from "../../../db/triggers.ts";
import type { ConfigSnapshot } from "../../../shared/config/types.ts";
import { CredentialCooldowns } from "../../../worker/credentials/cooldowns.ts";
import { CredentialSecrets } from "../../../worker/credentials/secrets.ts";
import { dispatchTriggers } from "../../../worker/dispatch.ts";
import { laneTargets } from "../../../worker/lanes.ts";
import { type RunningWorker, startWorker } from "../../../worker/worker.ts";
import type { TestDatabase } from "../../support/database.ts";
import {
  captureLogger,
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
 * Issue 11: a thrown error in event resolution does not lose a slot. Each case runs a worker with
 * `concurrency: 1`, makes one run throw while it resolves what it runs, then fires more triggers: a
 * lost slot would leave the worker running nothing ever again, so those triggers completing is the
 * proof that the slot came back.
 *
 * The throw: a run claimed from its lane reads its rows again (execute-invocation.ts getWorkload,
 * then run-invocation.ts resolveRunEvent → getTrigger). The test holds an ACCESS EXCLUSIVE lock on
 * the table so that read waits, then cancels it with pg_cancel_backend, as a statement_timeout or
 * an operator would: the read throws `canceling statement due to user request`.
 */
describe("worker: a thrown error while a run resolves its event gives its slot back", () => {
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
    for (const lane of laneTargets(config).keys()) await ensureLaneQueue(boss, lane, config.targets);
  });

  afterAll(async () => {
    await boss?.stop({ graceful: false });
    await bed?.close();
  });

  /** A trigger dispatched with no worker holding a slot: its run waits on its lane for any worker. */
  async function runOnLane(note: string): Promise<string> {
    const deps = {
      ...{ pool, boss, config, logger },
      leaseSeconds: 10,
      cooldowns: await CredentialCooldowns.load(pool, logger),
      secrets: await CredentialSecrets.resolve(config, pool, {}),
    };
    return withTransaction(pool, async (client) => {
      const { id } = await insertTrigger(client, {
        kind: "webhook",
        source: "deploy-hook",
        eventName: "deploy-hook",
        deliveryId: null,
        payloadJson: JSON.stringify({ note }),
      });
      // no dispatch job was sent for it: the batch's completion of this made-up job id is a no-op
      const job = { id: randomUUID(), data: { triggerId: id } };
      const [dispatched] = await dispatchTriggers(deps, client, [job], { workerId: "nobody", left: 0 });
      const outcome = dispatched!.outcome;
      expect(outcome.kind).toBe("dispatched");
      expect(outcome.kind === "dispatched" && outcome.claimed).toBeUndefined();
      return id;
    });
  }

  /**
   * Starts a one-slot worker while `table` is locked, waits for a backend blocked on `query` (the
   * run's read) and cancels that statement, then lets go of the lock.
   */
  async function startWorkerFailingRead(
    table: string,
    query: string,
    options: { staleAfterMs?: number; reapIntervalMs?: number } = {},
  ): Promise<RunningWorker> {
    const blocker = new pg.Client({ connectionString: database.url });
    await blocker.connect();
    let worker: RunningWorker | undefined;
    try {
      await blocker.query("BEGIN");
      await blocker.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
      worker = await startWorker({ config, databaseUrl: database.url, logger, heartbeatMs: 500, ...options });
      const blocked = async () => {
        const { rows } = await pool.query<{ pid: number }>(
          `SELECT pid FROM pg_stat_activity
            WHERE datname = current_database() AND pid <> pg_backend_pid()
              AND wait_event_type = 'Lock' AND strpos(query, $1) > 0`,
          [query],
        );
        return rows[0]?.pid;
      };
      const pid = await waitFor(blocked, `a read of ${table} to wait on the lock`);
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
  it("a run whose trigger read throws is recorded failed, and the next triggers run on the one slot", async () => {
    const poisoned = await runOnLane("trigger-read-fails");
    const worker = await startWorkerFailingRead("svc.triggers", "FROM svc.triggers WHERE id = $1");
    try {
      // the failing run ends recorded, with the error it threw, not held
      const failed = await waitForTrigger(pool, poisoned);
      expect(failed.status).toBe("error");
      const { invocations } = await lineage(pool, poisoned);
      expect(invocations).toHaveLength(1);
      expect(invocations[0].status).toBe("failed");
      expect(invocations[0].diagnostic.code).toBe("agent_failed");
      expect(invocations[0].diagnostic.message).toMatch(/canceling statement/);
      expect(failed.diagnostic).toEqual({ code: "agent_failed", message: invocations[0].diagnostic.message });
      await expectLaterTriggersRun();
    } finally {
      await worker.stop(1_000);
    }
  }, 60_000);

  // the one case whose throw leaves the run itself and reaches the slot's own catch (slots.ts run)
  it("a run whose workload read throws ends (retried or failed), and the next triggers run on the one slot", async () => {
    const poisoned = await runOnLane("workload-read-fails");
    const worker = await startWorkerFailingRead("svc.workloads", "FROM svc.workloads WHERE id = $1", {
      // the reaper finds a run left `running` without a heartbeat soon
      staleAfterMs: 2_000,
      reapIntervalMs: 500,
    });
    try {
      const ended = await waitForTrigger(pool, poisoned);
      const { invocations } = await lineage(pool, poisoned);
      expect(invocations).toHaveLength(1);
      expect(["completed", "failed"]).toContain(invocations[0].status);
      expect(ended.status).toBe(invocations[0].status === "completed" ? "completed" : "error");
      await expectLaterTriggersRun();
    } finally {
      await worker.stop(1_000);
    }
  }, 60_000);
});
