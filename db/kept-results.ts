import type { Queryable } from "./queryable.ts";

/**
 * The result an agent kept so far with `keep_result_so_far` (migration 107), on its own agent task:
 * only while the task runs, so a call that arrives after the attempt ended changes nothing.
 * Returns whether it was kept.
 */
export async function keepResult(
  db: Queryable,
  at: { invocationId: string; taskId: string },
  result: Record<string, unknown>,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE svc.tasks SET kept_result = $3
      WHERE id = $1 AND invocation_id = $2 AND kind = 'agent' AND status = 'running'`,
    [at.taskId, at.invocationId, JSON.stringify(result)],
  );
  return (rowCount ?? 0) > 0;
}

/** The result the agent task `taskId` kept last, or undefined when it kept none. */
export async function keptResult(
  db: Queryable,
  taskId: string,
): Promise<Record<string, unknown> | undefined> {
  const { rows } = await db.query<{ kept_result: Record<string, unknown> | null }>(
    "SELECT kept_result FROM svc.tasks WHERE id = $1",
    [taskId],
  );
  return rows[0]?.kept_result ?? undefined;
}

/** Whether the invocation runs its pipeline's shadow candidate (migration 103): its schema is the candidate's. */
export async function runsShadow(db: Queryable, invocationId: string): Promise<boolean> {
  const { rows } = await db.query<{ shadow: boolean }>("SELECT shadow FROM svc.invocations WHERE id = $1", [
    invocationId,
  ]);
  return rows[0]?.shadow === true;
}
