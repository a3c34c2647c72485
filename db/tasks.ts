import type { Diagnostic } from "../shared/diagnostics.ts";
import type { Queryable } from "./queryable.ts";

export type TaskKind = "setup" | "agent" | "result_check" | "output";
export type TaskStatus = "running" | "completed" | "failed" | "skipped";

export interface TaskRow {
  id: string;
  invocation_id: string;
  kind: TaskKind;
  name: string;
  seq: number;
  status: TaskStatus;
  exit_code: number | null;
  diagnostic: Diagnostic | null;
  started_at: Date;
  finished_at: Date | null;
}

export async function startTask(
  db: Queryable,
  row: { id: string; invocationId: string; kind: TaskKind; name: string; seq: number },
): Promise<void> {
  await db.query(
    "INSERT INTO svc.tasks (id, invocation_id, kind, name, seq, status) VALUES ($1, $2, $3, $4, $5, 'running')",
    [row.id, row.invocationId, row.kind, row.name, row.seq],
  );
}

export async function finishTask(
  db: Queryable,
  id: string,
  outcome: {
    status: Exclude<TaskStatus, "running">;
    exitCode?: number | null;
    diagnostic?: Diagnostic | null;
  },
): Promise<void> {
  await db.query(
    "UPDATE svc.tasks SET status = $2, exit_code = $3, diagnostic = $4, finished_at = now() WHERE id = $1",
    [
      id,
      outcome.status,
      outcome.exitCode ?? null,
      outcome.diagnostic ? JSON.stringify(outcome.diagnostic) : null,
    ],
  );
}

/** Tasks left `running` by a worker that vanished are closed when its invocation is reaped. */
export async function failOpenTasks(
  db: Queryable,
  invocationId: string,
  diagnostic: Diagnostic,
): Promise<void> {
  await db.query(
    `UPDATE svc.tasks SET status = 'failed', diagnostic = $2, finished_at = now()
      WHERE invocation_id = $1 AND status = 'running'`,
    [invocationId, JSON.stringify(diagnostic)],
  );
}

/** Closes the tasks of a run that stopped without finishing them (a cancellation) as `skipped`. */
export async function closeOpenTasks(
  db: Queryable,
  invocationId: string,
  diagnostic: Diagnostic,
): Promise<void> {
  await db.query(
    `UPDATE svc.tasks SET status = 'skipped', diagnostic = $2, finished_at = now()
      WHERE invocation_id = $1 AND status = 'running'`,
    [invocationId, JSON.stringify(diagnostic)],
  );
}
