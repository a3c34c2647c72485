import { DISPATCH_QUEUE } from "../shared/queues.ts";
import { BOSS_SCHEMA } from "./boss.ts";
import type { Queryable } from "./queryable.ts";

/**
 * The one module that reads pg-boss's job table with SQL (docs/architecture.md says why): pg-boss's
 * public API has no cross-queue listing, no way to join a job to our tables, and no way to ask
 * "which of these invocations has no live job" for thousands of rows at once. Limited to svc's own
 * queues (dispatch and the lanes). test/integration/queue-jobs.test.ts pins every column and state
 * read here against jobs made through pg-boss's public API, so an upgrade that changes them fails it.
 */
const LANE_PREFIX = "svc-lane-";
const OWN_QUEUES = `(j.name = '${DISPATCH_QUEUE}' OR j.name LIKE '${LANE_PREFIX}%')`;

export type QueueState = "active" | "waiting" | "delayed" | "failed";
export const QUEUE_STATES: readonly QueueState[] = ["active", "waiting", "delayed", "failed"];

// created/retry rows are waiting once start_after has passed, delayed before; retry backoff lands in delayed
const STATE_EXPRESSION = `CASE
  WHEN j.state = 'active' THEN 'active'
  WHEN j.state IN ('created', 'retry') AND j.start_after <= now() THEN 'waiting'
  WHEN j.state IN ('created', 'retry') THEN 'delayed'
  WHEN j.state = 'failed' THEN 'failed'
END`;

export interface QueueCounts {
  active: number;
  waiting: number;
  delayed: number;
  failed: number;
}

export async function countQueueStates(db: Queryable): Promise<QueueCounts> {
  const { rows } = await db.query<{ state: QueueState | null; n: string }>(
    `SELECT ${STATE_EXPRESSION} AS state, count(*) AS n FROM ${BOSS_SCHEMA}.job j
      WHERE ${OWN_QUEUES} AND j.state IN ('created', 'retry', 'active', 'failed') GROUP BY 1`,
  );
  const counts: QueueCounts = { active: 0, waiting: 0, delayed: 0, failed: 0 };
  for (const row of rows) if (row.state) counts[row.state] = Number(row.n);
  return counts;
}

export async function countFailedSince(db: Queryable, since: Date): Promise<number> {
  const { rows } = await db.query<{ n: string }>(
    `SELECT count(*) AS n FROM ${BOSS_SCHEMA}.job j
      WHERE ${OWN_QUEUES} AND j.state = 'failed' AND coalesce(j.completed_on, j.created_on) >= $1`,
    [since],
  );
  return Number(rows[0]?.n ?? 0);
}

export interface QueueJob {
  id: string;
  state: QueueState;
  /** what the job does: `dispatch` (resolve a trigger's pipelines) or `invoke` (run one invocation) */
  task: "dispatch" | "invoke" | "task";
  /** `dispatch`, or the target whose lane holds the job */
  lane: string;
  pipeline: string | null;
  trigger: string | null;
  invocation: string | null;
  workspace: string | null;
  changedAt: Date;
  attempts: number;
  maxAttempts: number;
}

export async function listQueueJobs(
  db: Queryable,
  state: QueueState,
  page: { limit: number; offset: number; since?: Date },
): Promise<QueueJob[]> {
  const params: unknown[] = [state, page.limit, page.offset];
  let sinceClause = "";
  if (page.since) {
    params.push(page.since);
    sinceClause = `AND coalesce(j.completed_on, j.started_on, j.created_on) >= $${params.length}`;
  }
  const { rows } = await db.query<QueueJob>(
    `SELECT * FROM (
       SELECT j.id::text AS id,
              ${STATE_EXPRESSION} AS state,
              CASE WHEN j.name = '${DISPATCH_QUEUE}' THEN 'dispatch' WHEN j.data ? 'taskId' THEN 'task' ELSE 'invoke' END AS task,
              CASE WHEN j.name = '${DISPATCH_QUEUE}' THEN 'dispatch' ELSE substr(j.name, ${LANE_PREFIX.length + 1}) END AS lane,
              w.pipeline,
              coalesce(j.data->>'triggerId', w.trigger_id) AS trigger,
              j.data->>'invocationId' AS invocation,
              w.workspace,
              greatest(j.created_on, j.started_on, j.completed_on) AS "changedAt",
              j.retry_count + CASE WHEN j.started_on IS NULL THEN 0 ELSE 1 END AS attempts,
              j.retry_limit + 1 AS "maxAttempts"
         FROM ${BOSS_SCHEMA}.job j
         LEFT JOIN svc.invocations i ON i.id = j.data->>'invocationId'
         LEFT JOIN svc.workloads w ON w.id = i.workload_id
        WHERE ${OWN_QUEUES} AND j.state IN ('created', 'retry', 'active', 'failed') ${sinceClause}
     ) jobs
     WHERE state = $1
     ORDER BY "changedAt" DESC, id
     LIMIT $2 OFFSET $3`,
    params,
  );
  return rows;
}

/** Removes failed svc jobs (the failed history) finished before `before`; returns how many. */
export async function purgeFailedJobs(db: Queryable, before: Date): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM ${BOSS_SCHEMA}.job j
      WHERE ${OWN_QUEUES} AND j.state = 'failed' AND coalesce(j.completed_on, j.created_on) < $1`,
    [before],
  );
  return rowCount ?? 0;
}

/** Trigger ids queued for longer than `olderThanSeconds` with no live dispatch job: lost sends. */
export async function findOrphanedTriggers(
  db: Queryable,
  olderThanSeconds: number,
  limit = 500,
): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT t.id FROM svc.triggers t
      WHERE t.status = 'queued' AND t.created_at < now() - make_interval(secs => $1)
        AND NOT EXISTS (
          SELECT 1 FROM ${BOSS_SCHEMA}.job j
           WHERE j.name = '${DISPATCH_QUEUE}' AND j.data->>'triggerId' = t.id
             AND j.state IN ('created', 'retry', 'active'))
      ORDER BY t.created_at LIMIT $2`,
    [olderThanSeconds, limit],
  );
  return rows.map((row) => row.id);
}

/**
 * Invocations that should be on a lane but have no live job there, on any lane (the local one
 * included): queued ones whose job is gone (it used up its retries while no worker could claim it),
 * and running ones whose worker stopped heartbeating (a new job lets another worker take over). The
 * live jobs are read once and subtracted as a set rather than probed per invocation: with 3,000
 * queued runs and 3,000 live jobs that is milliseconds instead of seconds, and it takes no row locks,
 * so a claim never waits on it.
 */
export async function findOrphanedInvocations(
  db: Queryable,
  olderThanSeconds: number,
  limit = 500,
): Promise<{ id: string; target: string | null; concurrency_group: string | null; shadow: boolean }[]> {
  const { rows } = await db.query<{
    id: string;
    target: string | null;
    concurrency_group: string | null;
    shadow: boolean;
  }>(
    `WITH candidates AS (
       SELECT i.id, i.target, i.concurrency_group, i.shadow, i.created_at FROM svc.invocations i
        WHERE (i.status = 'queued' AND least(i.created_at, i.updated_at) < now() - make_interval(secs => $1)
               -- one waiting for its concurrency group's running invocation has no job on purpose
               AND NOT EXISTS (SELECT 1 FROM svc.invocations o
                                WHERE o.concurrency_group = i.concurrency_group AND o.status = 'running'))
           OR (i.status = 'running' AND i.heartbeat_at < now() - make_interval(secs => $1))
        ORDER BY i.created_at LIMIT 5000),
     orphans AS (
       SELECT id FROM candidates
       EXCEPT
       SELECT j.data->>'invocationId' FROM ${BOSS_SCHEMA}.job j
        WHERE j.name LIKE '${LANE_PREFIX}%' AND j.state IN ('created', 'retry', 'active')
          -- a job of an orchestrator's task (it names the invocation too) does not run the invocation
          AND NOT j.data ? 'taskId')
     SELECT c.id, c.target, c.concurrency_group, c.shadow FROM candidates c JOIN orphans o ON o.id = c.id
      ORDER BY c.created_at LIMIT $2`,
    [olderThanSeconds, limit],
  );
  return rows;
}
