import { type Diagnostic, diagnostic } from "../shared/diagnostics.ts";
import { cancelOrchestratedTasks } from "./orchestrated-tasks.ts";
import type { Queryable } from "./queryable.ts";

/**
 * Concurrency groups (docs/worker.md, "Concurrency groups"). There is no group table and no flag:
 * an invocation carries its group's key, and the group's holder is whichever of its invocations is
 * `running`. Every decision over a group (dispatch joining it, a claim, a run's end, the reaper)
 * takes the group's advisory lock first, in the transaction that acts on the decision, and always
 * before any invocation row of the group, so two workers never both start one.
 */

/** What the superseded invocation's record says: the newer trigger that took its place. */
export function supersededBy(triggerId: string | null, group: string): Diagnostic {
  return diagnostic(
    "superseded",
    `superseded by trigger ${triggerId ?? "(none)"} (a newer event of concurrency group ${group})`,
  );
}

/** Takes the groups' transaction-scoped locks, in one order, so two lockers wait instead of deadlocking. */
export async function lockGroups(db: Queryable, keys: readonly string[]): Promise<void> {
  const sorted = [...new Set(keys)].sort();
  if (sorted.length === 0) return;
  await db.query({
    name: "svc_lock_groups",
    text: "SELECT pg_advisory_xact_lock(hashtextextended('svc.group:' || k, 0)) FROM unnest($1::text[]) AS k",
    values: [sorted],
  });
}

/**
 * The group's lock if nobody holds it now. The reaper holds invocation rows already when it meets
 * a group, so it must not wait for a lock whose holder may be waiting for those rows.
 */
export async function tryLockGroup(db: Queryable, key: string): Promise<boolean> {
  const { rows } = await db.query<{ locked: boolean }>(
    "SELECT pg_try_advisory_xact_lock(hashtextextended('svc.group:' || $1, 0)) AS locked",
    [key],
  );
  return rows[0]?.locked === true;
}

export interface SupersededRun {
  id: string;
  /** what it was: a `running` one was held by a worker, which must be told to stop */
  was: "queued" | "running";
  trigger_id: string | null;
}

/**
 * A newer event joins the group (under its lock): every waiting invocation of the group ends
 * `cancelled` with `superseded`, and so does the running one when `cancelRunning`. `held` is true
 * when a running one stays: the newcomer then waits, unclaimed, until it ends.
 */
export async function supersedeInGroup(
  db: Queryable,
  group: { key: string; triggerId: string; cancelRunning: boolean },
): Promise<{ superseded: SupersededRun[]; held: boolean }> {
  const superseded = supersededBy(group.triggerId, group.key);
  const { rows } = await db.query<SupersededRun & { held: boolean }>(
    `WITH target AS (
       SELECT i.id, i.status, w.trigger_id FROM svc.invocations i JOIN svc.workloads w ON w.id = i.workload_id
        WHERE i.concurrency_group = $1 AND (i.status = 'queued' OR (i.status = 'running' AND $2))
        FOR UPDATE OF i),
     ended AS (
       UPDATE svc.invocations i SET status = 'cancelled', diagnostic = $3, finished_at = now(), updated_at = now()
         FROM target t WHERE i.id = t.id RETURNING i.id)
     SELECT t.id, t.status AS was, t.trigger_id, false AS held FROM target t JOIN ended e ON e.id = t.id
     UNION ALL
     SELECT NULL, NULL, NULL, true
      WHERE NOT $2 AND EXISTS (SELECT 1 FROM svc.invocations WHERE concurrency_group = $1 AND status = 'running')`,
    [group.key, group.cancelRunning, JSON.stringify(superseded)],
  );
  const ended = rows.filter((row) => !row.held).map(({ held: _held, ...row }) => row);
  for (const row of ended) if (row.was === "running") await cancelOrchestratedTasks(db, row.id, superseded);
  return { superseded: ended, held: rows.some((row) => row.held) };
}

/**
 * After a run of the group ended or went back to the queue (under the group's lock): of its waiting
 * invocations only the newest is kept (the others end `superseded`), and when nothing of the group
 * runs any more, that newest one is returned to be sent to its lane.
 */
export async function nextInGroup(
  db: Queryable,
  key: string,
): Promise<{ start?: { id: string; target: string | null }; superseded: SupersededRun[] }> {
  const { rows } = await db.query<{ id: string; target: string | null; trigger_id: string | null }>(
    `SELECT i.id, i.target, w.trigger_id FROM svc.invocations i JOIN svc.workloads w ON w.id = i.workload_id
      WHERE i.concurrency_group = $1 AND i.status = 'queued'
      ORDER BY i.created_at DESC, i.id DESC`,
    [key],
  );
  const [newest, ...older] = rows;
  if (!newest) return { superseded: [] };
  const superseded: SupersededRun[] = [];
  if (older.length > 0) {
    const ended = supersededBy(newest.trigger_id, key);
    const { rows: cancelled } = await db.query<{ id: string }>(
      `UPDATE svc.invocations SET status = 'cancelled', diagnostic = $2, finished_at = now(), updated_at = now()
        WHERE id = ANY($1::text[]) AND status = 'queued' RETURNING id`,
      [older.map((row) => row.id), JSON.stringify(ended)],
    );
    const done = new Set(cancelled.map((row) => row.id));
    for (const row of older) {
      if (!done.has(row.id)) continue;
      // a run released mid-flight may have left orchestrated tasks behind: they end with it
      await cancelOrchestratedTasks(db, row.id, ended);
      superseded.push({ id: row.id, was: "queued", trigger_id: row.trigger_id });
    }
  }
  const { rows: running } = await db.query(
    "SELECT 1 FROM svc.invocations WHERE concurrency_group = $1 AND status = 'running' LIMIT 1",
    [key],
  );
  return running.length > 0
    ? { superseded }
    : { start: { id: newest.id, target: newest.target }, superseded };
}

/**
 * The head the group's last completed run reviewed (not `invocationId` itself), or undefined. The
 * run checks it is an ancestor of its own head before it believes it (worker/run/previous-head.ts).
 */
export async function previousGroupHead(
  db: Queryable,
  key: string,
  invocationId: string,
): Promise<string | undefined> {
  const { rows } = await db.query<{ head_sha: string }>(
    `SELECT head_sha FROM svc.invocations
      WHERE concurrency_group = $1 AND status = 'completed' AND head_sha IS NOT NULL AND head_sha <> '' AND id <> $2
      ORDER BY finished_at DESC LIMIT 1`,
    [key, invocationId],
  );
  return rows[0]?.head_sha;
}
