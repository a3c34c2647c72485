import pg from "pg";
import type { PgBoss } from "pg-boss";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBoss } from "../../../db/boss.ts";
import type { ConfigSnapshot } from "../../../shared/config/types.ts";
import { startWorker } from "../../../worker/main.ts";
import { ensureWorkerQueues } from "../../../worker/queue/lanes.ts";
import {
  captureLogger,
  commandTarget,
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
 * An agent's run token is stored by its task's start and revoked by its task's end, in the same
 * statements (worker/run/agent.ts). These cases check that the token is revoked however the agent's
 * attempt ends: by the end's own statement, and by a revoke of its own when that statement throws.
 */
describe("worker: an agent's run token dies with its attempt", () => {
  let bed: TestBed;
  let pool: pg.Pool;
  let boss: PgBoss;
  let config: ConfigSnapshot;
  const { logger } = captureLogger();

  beforeAll(async () => {
    bed = await openTestBed();
    pool = bed.pool;
    // no setup step: the agent's end is the run's first write to svc.artifacts
    config = makeConfig(bed.dir, {
      worker: { concurrency: 1, graceMs: 5_000 },
      targets: { echo: commandTarget("echo", ["/bin/echo", '{"ok":true}']) },
      pipelines: {
        answer: pipeline("answer", {
          trigger: { webhook: ["answer-hook"], codehost: [], tracker: [] },
          targets: ["echo"],
        }),
      },
    });
    boss = await startBoss({ url: bed.database.url, supervise: false });
    await ensureWorkerQueues(boss, config);
  });

  afterAll(async () => {
    await boss?.stop({ graceful: false });
    await bed?.close();
  });

  const fireAnswer = () =>
    fire(pool, boss, { kind: "webhook", source: "answer-hook", eventName: "answer-hook" });

  /** The tokens issued to the trigger's invocations: one row each, with its task binding. */
  async function tokensOf(triggerId: string) {
    const { rows } = await pool.query<{ revoked: boolean; name: string }>(
      `SELECT t.revoked_at IS NOT NULL AS revoked, t.name
         FROM svc.api_tokens t
         JOIN svc.invocations i ON i.id = t.invocation_id
         JOIN svc.workloads w ON w.id = i.workload_id
        WHERE w.trigger_id = $1`,
      [triggerId],
    );
    return rows;
  }

  it("a completed attempt's token is revoked by the statement that ends its task", async () => {
    const worker = await startWorker({ config, databaseUrl: bed.database.url, logger });
    try {
      const id = await fireAnswer();
      expect((await waitForTrigger(pool, id)).status).toBe("completed");
      const { invocations, tasks } = await lineage(pool, id);
      expect(tasks.map((task) => [task.kind, task.status])).toEqual([
        ["agent", "completed"],
        ["result_check", "skipped"],
      ]);
      expect(await tokensOf(id)).toEqual([{ revoked: true, name: `run/${invocations[0].id}` }]);
    } finally {
      await worker.stop(1_000);
    }
  }, 60_000);

  it("an attempt whose task end throws still has its token revoked", async () => {
    // the test holds svc.artifacts locked until the agent's end (task, transcript, revoke in one
    // statement) waits on it, then cancels that statement: the end throws, and only the separate
    // revoke (svc.api_tokens is not locked) can still revoke the token
    const blocker = new pg.Client({ connectionString: bed.database.url });
    await blocker.connect();
    const worker = await startWorker({ config, databaseUrl: bed.database.url, logger });
    try {
      await blocker.query("BEGIN");
      await blocker.query("LOCK TABLE svc.artifacts IN ACCESS EXCLUSIVE MODE");
      const id = await fireAnswer();
      const pid = await waitFor(async () => {
        const { rows } = await pool.query<{ pid: number }>(
          `SELECT pid FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock'
              AND strpos(query, 'revoked AS') > 0`,
        );
        return rows[0]?.pid;
      }, "the agent's end to wait on the lock");
      await pool.query("SELECT pg_cancel_backend($1)", [pid]);
      await blocker.query("ROLLBACK");
      const failed = await waitForTrigger(pool, id);
      expect(failed.status).toBe("error");
      const { invocations } = await lineage(pool, id);
      expect(invocations[0].diagnostic.code).toBe("agent_failed");
      expect(invocations[0].diagnostic.message).toMatch(/canceling statement/);
      expect(await tokensOf(id)).toEqual([{ revoked: true, name: `run/${invocations[0].id}` }]);
    } finally {
      await blocker.query("ROLLBACK").catch(() => {}); // already rolled back when the case got that far
      await blocker.end();
      await worker.stop(1_000);
    }
  }, 60_000);
});
