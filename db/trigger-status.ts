import type pg from "pg";
import type { Queryable } from "./queryable.ts";

/**
 * The worker's extra reads and deletes of `svc.triggers` (db/triggers.ts holds the rest): the row
 * lock that makes dispatch idempotent, and the short retention tier of discarded triggers.
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
  /** whether a workload already exists for it (a dispatch that ran before) */
  has_workloads: boolean;
}

const LOCKED_COLUMNS = `t.id, t.kind, t.source, t.event_name, t.status, t.payload, t.owner, t.replay_of,
       EXISTS (SELECT 1 FROM svc.workloads w WHERE w.trigger_id = t.id) AS has_workloads`;

/** Row-locks the trigger so a retried dispatch job waits for, then sees, the first one's work. */
export async function lockTrigger(db: pg.ClientBase, id: string): Promise<LockedTrigger | undefined> {
  const { rows } = await db.query<LockedTrigger>(
    `SELECT ${LOCKED_COLUMNS} FROM svc.triggers t WHERE t.id = $1 FOR UPDATE OF t`,
    [id],
  );
  return rows[0];
}

/**
 * Row-locks a batch of triggers for one dispatch transaction, in id order so that two workers
 * locking overlapping batches wait for each other instead of deadlocking.
 */
export async function lockTriggers(db: pg.ClientBase, ids: string[]): Promise<Map<string, LockedTrigger>> {
  const { rows } = await db.query<LockedTrigger>(
    `SELECT ${LOCKED_COLUMNS} FROM svc.triggers t WHERE t.id = ANY($1::text[]) ORDER BY t.id FOR UPDATE OF t`,
    [ids],
  );
  return new Map(rows.map((row) => [row.id, row]));
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
