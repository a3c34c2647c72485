import type pg from "pg";
import type { PullHead } from "../shared/codehost/github-reads.ts";
import type { Queryable } from "./queryable.ts";
import { withTransaction } from "./transaction.ts";

/**
 * The worker's extra reads and writes of `svc.triggers` (db/triggers.ts holds the rest): the row
 * locks that make dispatch idempotent, the settlement of a trigger from its invocations, and the
 * short retention tier of discarded triggers.
 */

export interface LockedTrigger {
  id: string;
  kind: "webhook" | "codehost" | "tracker" | "manual" | "schedule" | "replay";
  source: string;
  event_name: string;
  status: "queued" | "running" | "completed" | "error" | "discarded";
  payload: unknown;
  owner: string | null;
  replay_of: string | null;
  /** set on an eval run's replay: its `source` names the one pipeline it runs */
  eval_run_id: string | null;
  /** whether a workload already exists for it (a dispatch that ran before) */
  has_workloads: boolean;
  /** the author's association svc established (GitLab: the members API), null when not looked up */
  author_association: "owner" | "member" | "none" | null;
  /** a commented pull request's head and base as dispatch read them (GitHub), null when not looked up */
  pull_head: PullHead | null;
  /** its runs' outputs are held back and recorded instead of published (migration 100) */
  hold_outputs: boolean;
  /** set on a backtest's replay: its `source` names the pipeline whose candidate it runs (migration 105) */
  backtest_id: string | null;
}

const LOCKED_COLUMNS = `t.id, t.kind, t.source, t.event_name, t.status, t.payload, t.owner, t.replay_of, t.eval_run_id,
       t.author_association, t.pull_head, t.hold_outputs, t.backtest_id, EXISTS (SELECT 1 FROM svc.workloads w WHERE w.trigger_id = t.id) AS has_workloads`;

/**
 * Row-locks a batch of triggers for one dispatch transaction, in id order so that two workers
 * locking overlapping batches wait for each other instead of deadlocking.
 */
export async function lockTriggers(db: pg.ClientBase, ids: string[]): Promise<Map<string, LockedTrigger>> {
  // named: every dispatch batch runs it, and planning it each time cost Postgres a third of a
  // millisecond on the path from a webhook to its run's first step
  const { rows } = await db.query<LockedTrigger>({
    name: "svc_lock_triggers",
    text: `SELECT ${LOCKED_COLUMNS} FROM svc.triggers t WHERE t.id = ANY($1::text[]) ORDER BY t.id FOR UPDATE OF t`,
    values: [ids],
  });
  return new Map(rows.map((row) => [row.id, row]));
}

/** Keeps the author's association dispatch established where the payload states none (see 098_trigger_author.sql). */
export async function recordTriggerAuthor(
  db: pg.ClientBase,
  id: string,
  association: "owner" | "member" | "none",
): Promise<void> {
  await db.query("UPDATE svc.triggers SET author_association = $2 WHERE id = $1", [id, association]);
}

/** Keeps the head dispatch read for a comment on a pull request (see 099_trigger_pull_head.sql). */
export async function recordTriggerPullHead(db: pg.ClientBase, id: string, head: PullHead): Promise<void> {
  await db.query("UPDATE svc.triggers SET pull_head = $2 WHERE id = $1", [id, JSON.stringify(head)]);
}

/** The fields a run resolves its event from, with what dispatch established (worker/event/resolve.ts). */
export interface TriggerEventRow {
  kind: string;
  source: string;
  event_name: string;
  payload: unknown;
  replay_of: string | null;
  author_association: "owner" | "member" | "none" | null;
  pull_head: PullHead | null;
}

/**
 * A trigger as a run or a replay resolves it. Kept apart from db/triggers.ts getTrigger, whose row
 * is the API's: what dispatch established is the worker's record, not part of the contract.
 */
export async function getTriggerEvent(db: Queryable, id: string): Promise<TriggerEventRow | undefined> {
  const { rows } = await db.query<TriggerEventRow>({
    name: "svc_get_trigger_event",
    text: `SELECT kind, source, event_name, payload, replay_of, author_association, pull_head
             FROM svc.triggers WHERE id = $1`,
    values: [id],
  });
  return rows[0];
}

/**
 * A trigger's status follows its invocations: `running` while any is queued or running, then
 * `error` when any failed (carrying the first failure's `{ code, message }`), else `completed`.
 * Workloads follow their own invocations the same way. settleTrigger sets both in a transaction
 * of its own; settleTriggerIn in the caller's (the one that finished the invocation).
 */
export async function settleTrigger(pool: pg.Pool, triggerId: string): Promise<void> {
  await withTransaction(pool, (client) => settleTriggerIn(client, triggerId));
}

/**
 * settleTrigger inside the caller's transaction. The row lock comes first, in its own
 * statement: the settling statement's snapshot then includes every invocation whose transaction
 * finished before the lock was granted, so two last invocations finishing at once settle it once.
 */
export async function settleTriggerIn(db: pg.ClientBase, triggerId: string): Promise<void> {
  await db.query({
    name: "svc_lock_trigger",
    text: "SELECT 1 FROM svc.triggers WHERE id = $1 FOR UPDATE",
    values: [triggerId],
  });
  await settleLockedTrigger(db, triggerId);
}

/**
 * settleTriggerIn once the caller's transaction holds the trigger's row lock, taken by a statement
 * of its own before this one (db/invocations.ts finishInvocation takes it with the run's end).
 */
export async function settleLockedTrigger(db: pg.ClientBase, triggerId: string): Promise<void> {
  await db.query({
    name: "svc_settle_trigger",
    // Both tables are reached through the trigger's workloads, by index: the invocations per
    // workload (OFFSET 0 keeps the subquery from being flattened into a join), the workloads by
    // trigger_id. Without that, the plan this statement got while the tables were young scanned
    // every invocation and every workload for the connection's life: 0.7 ms a settlement after
    // 4,000 runs, and growing
    text: `WITH inv AS (
       SELECT i.id, i.workload_id, i.status, i.diagnostic, i.created_at
         FROM svc.workloads w CROSS JOIN LATERAL (
              SELECT * FROM svc.invocations i WHERE i.workload_id = w.id OFFSET 0) i
        WHERE w.trigger_id = $1),
     per_workload AS (
       SELECT workload_id,
              CASE WHEN bool_or(status IN ('queued', 'running')) THEN 'running'
                   WHEN bool_or(status = 'failed') THEN 'error' ELSE 'completed' END AS status
         FROM inv GROUP BY workload_id),
     workloads AS (
       UPDATE svc.workloads w SET status = p.status, updated_at = now()
         FROM per_workload p WHERE w.trigger_id = $1 AND w.id = p.workload_id),
     summary AS (
       SELECT count(*) AS n, bool_or(status IN ('queued', 'running')) AS open,
              bool_or(status = 'failed') AS failed,
              (SELECT jsonb_strip_nulls(jsonb_build_object('code', f.diagnostic->'code', 'message', f.diagnostic->'message'))
                 FROM inv f WHERE f.status = 'failed' AND f.diagnostic IS NOT NULL
                ORDER BY f.created_at, f.id LIMIT 1) AS first_failure
         FROM inv)
     UPDATE svc.triggers t
        SET status = CASE WHEN s.open THEN 'running' WHEN s.failed THEN 'error' ELSE 'completed' END,
            diagnostic = CASE WHEN s.open THEN NULL ELSE s.first_failure END,
            updated_at = now()
       FROM summary s
      WHERE t.id = $1 AND t.status <> 'discarded' AND s.n > 0 AND NOT (s.open AND t.status = 'running')`,
    values: [triggerId],
  });
}

/** Discarded triggers live in the shorter retention tier; they own no workloads, so they go alone. */
export async function deleteDiscardedOlderThan(db: Queryable, days: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM svc.triggers t
      WHERE t.status = 'discarded' AND t.created_at < now() - make_interval(days => $1)
        AND NOT EXISTS (SELECT 1 FROM svc.workloads w WHERE w.trigger_id = t.id)
        AND NOT EXISTS (SELECT 1 FROM svc.triggers r WHERE r.replay_of = t.id)`,
    [days],
  );
  return rowCount ?? 0;
}
