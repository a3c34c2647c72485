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
 * The order of a group's events: by their trigger's arrival (`created_at`, then id for triggers
 * stored in one transaction), not by when a worker happened to dispatch them, so a dispatch job
 * retried late, or fetched behind a newer one in a batch, never overtakes the newer event.
 */
const EVENT_ORDER = "t.created_at DESC, t.id DESC";

/** Ends the invocations `ids` (those still queued or running) `superseded`, with their orchestrated tasks. */
async function endSuperseded(db: Queryable, ids: string[], ended: Diagnostic): Promise<string[]> {
  if (ids.length === 0) return [];
  const { rows } = await db.query<{ id: string }>(
    `UPDATE svc.invocations SET status = 'cancelled', diagnostic = $2, finished_at = now(), updated_at = now()
      WHERE id = ANY($1::text[]) AND status IN ('queued', 'running') RETURNING id`,
    [ids, JSON.stringify(ended)],
  );
  // a run released mid-flight may have left orchestrated tasks behind: they end with it
  for (const row of rows) await cancelOrchestratedTasks(db, row.id, ended);
  return rows.map((row) => row.id);
}

/**
 * An event joins the group (under its lock), before its invocation `invocationId` is written.
 * - The group holds a newer event already (queued or running): the newcomer is overtaken, and its
 *   invocation is to be ended `superseded` by that event (`overtakenBy`), once written.
 * - Otherwise every waiting invocation of the group ends `cancelled` with `superseded`, and so does
 *   the running one when `cancelRunning`; `held` is true when a running one stays: the newcomer then
 *   waits, unclaimed, until it ends.
 */
export async function supersedeInGroup(
  db: Queryable,
  group: { key: string; triggerId: string; cancelRunning: boolean },
): Promise<{ superseded: SupersededRun[]; held: boolean; overtakenBy?: string }> {
  const { rows } = await db.query<SupersededRun & { newer: boolean }>(
    `SELECT i.id, i.status AS was, w.trigger_id,
            (t.created_at, t.id) > (SELECT created_at, id FROM svc.triggers WHERE id = $2) AS newer
       FROM svc.invocations i JOIN svc.workloads w ON w.id = i.workload_id
       LEFT JOIN svc.triggers t ON t.id = w.trigger_id
      WHERE i.concurrency_group = $1 AND i.status IN ('queued', 'running')
      ORDER BY ${EVENT_ORDER}
      FOR UPDATE OF i`,
    [group.key, group.triggerId],
  );
  const newest = rows[0];
  if (newest?.newer) return { superseded: [], held: false, overtakenBy: newest.trigger_id ?? undefined };
  const ending = rows.filter((row) => row.was === "queued" || group.cancelRunning);
  const ended = new Set(
    await endSuperseded(
      db,
      ending.map((row) => row.id),
      supersededBy(group.triggerId, group.key),
    ),
  );
  return {
    superseded: ending.filter((row) => ended.has(row.id)).map(({ newer: _newer, ...row }) => row),
    held: rows.some((row) => row.was === "running" && !ended.has(row.id)),
  };
}

/** The newcomer's invocation, written, ends overtaken by the group's newer event (supersedeInGroup). */
export async function endOvertaken(
  db: Queryable,
  invocationId: string,
  key: string,
  newer: string,
): Promise<void> {
  await endSuperseded(db, [invocationId], supersededBy(newer, key));
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
       LEFT JOIN svc.triggers t ON t.id = w.trigger_id
      WHERE i.concurrency_group = $1 AND i.status = 'queued'
      ORDER BY ${EVENT_ORDER}`,
    [key],
  );
  const [newest, ...older] = rows;
  if (!newest) return { superseded: [] };
  const ended = new Set(
    await endSuperseded(
      db,
      older.map((row) => row.id),
      supersededBy(newest.trigger_id, key),
    ),
  );
  const superseded: SupersededRun[] = older
    .filter((row) => ended.has(row.id))
    .map((row) => ({ id: row.id, was: "queued", trigger_id: row.trigger_id }));
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
