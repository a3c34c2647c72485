import type { Queryable } from "./queryable.ts";

/**
 * The event an invocation's run answers, as a note's trust needs it: its trigger's kind and
 * source, a replay's original's (as the worker resolves it, worker/event/resolve.ts). `null` when
 * the run has no trigger (fired through the API without one: an operator's); undefined when there
 * is no such invocation.
 */
export async function eventOriginOfInvocation(
  db: Queryable,
  invocationId: string,
): Promise<{ kind: string; source: string } | null | undefined> {
  const { rows } = await db.query<{
    kind: string | null;
    source: string | null;
    original_kind: string | null;
    original_source: string | null;
  }>(
    `SELECT t.kind, t.source, o.kind AS original_kind, o.source AS original_source
       FROM svc.invocations i
       JOIN svc.workloads w ON w.id = i.workload_id
       LEFT JOIN svc.triggers t ON t.id = w.trigger_id
       LEFT JOIN svc.triggers o ON o.id = t.replay_of AND t.kind = 'replay'
      WHERE i.id = $1`,
    [invocationId],
  );
  const row = rows[0];
  if (!row) return undefined;
  if (row.original_kind !== null && row.original_source !== null)
    return { kind: row.original_kind, source: row.original_source };
  if (row.kind === null || row.source === null) return null;
  return { kind: row.kind, source: row.source };
}
