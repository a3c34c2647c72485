import type pg from "pg";
import type { PgBoss } from "pg-boss";
import type { Diagnostic } from "../shared/diagnostics.ts";
import { newId } from "../shared/ids.ts";
import { laneQueue, type TaskJob } from "../shared/queues.ts";
import { transactionDb } from "./boss.ts";
import type { Queryable } from "./queryable.ts";
import type { TokenUsage } from "./tasks.ts";

/**
 * The tasks an orchestrator run creates (docs/worker.md, "Orchestrated execution"): rows of
 * svc.tasks with a `spec`, under the orchestrator's invocation. The ingress creates, lists and
 * cancels them (the task tools of /mcp); workers claim them from the lanes like invocations.
 *
 * A task is `pending` until the run has a parallel slot for it, then `queued` with a lane job,
 * `running` while a worker holds it (worker_id, heartbeat_at), and ends `completed`, `failed` or
 * `cancelled`. Every change to how many of one run's tasks are active is made under that run's
 * advisory lock, so `max_tasks` and `max_parallel` hold against concurrent calls.
 */

export interface TaskSpec {
  instructions: string;
  skill?: string;
  /** a binding name of the pipeline's `principals` */
  principal?: string;
  inputs?: unknown;
}

export type OrchestratedStatus = "pending" | "queued" | "running" | "completed" | "failed" | "cancelled";

export interface OrchestratedTask {
  id: string;
  invocationId: string;
  parentId: string | null;
  status: OrchestratedStatus;
  target: string | null;
  spec: TaskSpec;
  result: unknown;
  diagnostic: Diagnostic | null;
  attempts: number;
  workerId: string | null;
  createdAt: Date;
  startedAt: Date;
  finishedAt: Date | null;
}

const COLUMNS = `id, invocation_id AS "invocationId", parent_id AS "parentId", status, target, spec, result,
  diagnostic, attempts, worker_id AS "workerId", created_at AS "createdAt", started_at AS "startedAt",
  finished_at AS "finishedAt"`;

/** Statuses a task can still leave: cancelling one of these stops it. */
export const OPEN_STATUSES = ["pending", "queued", "running"] as const;

/** Serialises the budget decisions of one run (see the module comment). */
async function lockRun(db: Queryable, invocationId: string): Promise<void> {
  await db.query("SELECT pg_advisory_xact_lock(hashtext('svc.tasks:' || $1))", [invocationId]);
}

export type CreateOutcome =
  | { kind: "created"; task: OrchestratedTask }
  | { kind: "budget"; created: number }
  /** the run is no longer queued or running (cancelled, timed out, finished) */
  | { kind: "ended"; status: string };

/** Inside the caller's transaction: a new `pending` task, unless the run already has `maxTasks`. */
export async function createOrchestratedTask(
  db: Queryable,
  row: {
    invocationId: string;
    parentId: string | null;
    target: string | null;
    spec: TaskSpec;
    maxTasks: number;
  },
): Promise<CreateOutcome> {
  await lockRun(db, row.invocationId);
  // a call still in flight when its run ended must not leave a task behind it
  const { rows: run } = await db.query<{ status: string }>(
    "SELECT status FROM svc.invocations WHERE id = $1",
    [row.invocationId],
  );
  if (!["queued", "running"].includes(run[0]?.status ?? ""))
    return { kind: "ended", status: run[0]?.status ?? "gone" };
  const { rows: counted } = await db.query<{ created: number; seq: number }>(
    `SELECT count(*) FILTER (WHERE spec IS NOT NULL)::int AS created, coalesce(max(seq), 0)::int AS seq
       FROM svc.tasks WHERE invocation_id = $1`,
    [row.invocationId],
  );
  const { created, seq } = counted[0]!;
  if (created >= row.maxTasks) return { kind: "budget", created };
  const name = `task ${created + 1}${row.spec.skill ? ` (${row.spec.skill})` : ""}`;
  const { rows } = await db.query<OrchestratedTask>(
    `INSERT INTO svc.tasks (id, invocation_id, kind, name, seq, status, spec, parent_id, target)
     VALUES ($1, $2, 'agent', $3, $4, 'pending', $5, $6, $7) RETURNING ${COLUMNS}`,
    [newId("task"), row.invocationId, name, seq + 1, JSON.stringify(row.spec), row.parentId, row.target],
  );
  return { kind: "created", task: rows[0]! };
}

/**
 * Inside the caller's transaction: moves the run's oldest `pending` tasks to `queued`, with a job on
 * their lane, while fewer than `maxParallel` are queued or running. Returns the lanes that got jobs;
 * the caller wakes them after the commit (db/boss.ts wakeWorkers).
 */
export async function promoteTasks(
  db: pg.ClientBase,
  boss: PgBoss,
  invocationId: string,
  maxParallel: number,
): Promise<string[]> {
  await lockRun(db, invocationId);
  // a shadow run's tasks wait on the shadow lanes as it did (shared/queues.ts laneQueue)
  const { rows } = await db.query<{ id: string; target: string | null; shadow: boolean }>(
    `UPDATE svc.tasks SET status = 'queued'
      WHERE id IN (
        SELECT id FROM svc.tasks
         WHERE invocation_id = $1 AND spec IS NOT NULL AND status = 'pending'
         ORDER BY seq
         LIMIT greatest(0, $2 - (SELECT count(*) FROM svc.tasks
                                  WHERE invocation_id = $1 AND spec IS NOT NULL AND status IN ('queued', 'running'))))
      RETURNING id, target, (SELECT i.shadow FROM svc.invocations i WHERE i.id = $1) AS shadow`,
    [invocationId, maxParallel],
  );
  const lanes = new Map<string, TaskJob[]>();
  for (const row of rows) {
    const lane = laneQueue(row.target, row.shadow === true);
    lanes.set(lane, [...(lanes.get(lane) ?? []), { invocationId, taskId: row.id }]);
  }
  for (const [lane, jobs] of lanes)
    await boss.insert(
      lane,
      jobs.map((data) => ({ data })),
      { db: transactionDb(db) },
    );
  return [...lanes.keys()];
}

export async function listOrchestratedTasks(
  db: Queryable,
  invocationId: string,
): Promise<OrchestratedTask[]> {
  const { rows } = await db.query<OrchestratedTask>(
    `SELECT ${COLUMNS} FROM svc.tasks WHERE invocation_id = $1 AND spec IS NOT NULL ORDER BY seq`,
    [invocationId],
  );
  return rows;
}

export async function getOrchestratedTask(
  db: Queryable,
  invocationId: string,
  id: string,
): Promise<OrchestratedTask | undefined> {
  const { rows } = await db.query<OrchestratedTask>(
    `SELECT ${COLUMNS} FROM svc.tasks WHERE id = $1 AND invocation_id = $2 AND spec IS NOT NULL`,
    [id, invocationId],
  );
  return rows[0];
}

/** A task's status alone: its worker's watch asks it at each heartbeat whether the task was cancelled. */
export async function orchestratedTaskStatus(db: Queryable, id: string): Promise<string | undefined> {
  const { rows } = await db.query<{ status: string }>("SELECT status FROM svc.tasks WHERE id = $1", [id]);
  return rows[0]?.status;
}

/** The channel on which a cancelled task is announced (payload: its id), so its worker kills it at once. */
export const TASK_CANCEL_CHANNEL = "svc_task_cancelled";

/**
 * Cancels the run's open tasks (all of them, or the one named by `taskId`) and announces each; a
 * worker holding one stops it at once (or at its next heartbeat, should the NOTIFY be lost).
 */
export async function cancelOrchestratedTasks(
  db: Queryable,
  invocationId: string,
  diagnostic: Diagnostic,
  taskId?: string,
): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `UPDATE svc.tasks SET status = 'cancelled', diagnostic = $2, finished_at = now()
      WHERE invocation_id = $1 AND spec IS NOT NULL AND status IN ('pending', 'queued', 'running')
        AND ($3::text IS NULL OR id = $3)
      RETURNING id`,
    [invocationId, JSON.stringify(diagnostic), taskId ?? null],
  );
  for (const row of rows) await db.query("SELECT pg_notify($1, $2)", [TASK_CANCEL_CHANNEL, row.id]);
  return rows.map((row) => row.id);
}

/** Claims queued tasks (or running ones whose holder went stale) for `workerId`, in one statement. */
export async function claimOrchestratedTasks(
  db: Queryable,
  ids: string[],
  workerId: string,
  staleAfterMs: number,
): Promise<OrchestratedTask[]> {
  if (ids.length === 0) return [];
  // a task of a run that has ended is cancelled, not run (see createOrchestratedTask for the race)
  await db.query(
    `UPDATE svc.tasks t SET status = 'cancelled', finished_at = now(),
            diagnostic = '{"code": "cancelled", "message": "the orchestrator ended before the task started"}'
       FROM svc.invocations i
      WHERE t.id = ANY($1::text[]) AND t.spec IS NOT NULL AND t.status = 'queued'
        AND i.id = t.invocation_id AND i.status NOT IN ('queued', 'running')`,
    [ids],
  );
  const { rows } = await db.query<OrchestratedTask>({
    name: "svc_claim_tasks",
    text: `UPDATE svc.tasks
        SET status = 'running', worker_id = $2, heartbeat_at = now(), attempts = attempts + 1, started_at = now()
      WHERE id = ANY($1::text[]) AND spec IS NOT NULL
        AND (status = 'queued'
             OR (status = 'running' AND heartbeat_at < now() - make_interval(secs => $3::double precision / 1000)))
      RETURNING ${COLUMNS}`,
    values: [ids, workerId, staleAfterMs],
  });
  return rows;
}

/** Of the given tasks, those `running`, each with the worker that holds it: the sweeper's owners of task containers. */
export async function runningTaskWorkers(db: Queryable, ids: string[]): Promise<Map<string, string>> {
  const { rows } = await db.query<{ id: string; worker_id: string }>(
    "SELECT id, worker_id FROM svc.tasks WHERE id = ANY($1) AND status = 'running'",
    [ids],
  );
  return new Map(rows.map((row) => [row.id, row.worker_id]));
}

/** false when this worker no longer holds the task (cancelled, or taken over). */
export async function heartbeatOrchestratedTask(
  db: Queryable,
  id: string,
  workerId: string,
): Promise<boolean> {
  const { rowCount } = await db.query({
    name: "svc_heartbeat_task",
    text: "UPDATE svc.tasks SET heartbeat_at = now() WHERE id = $1 AND worker_id = $2 AND status = 'running'",
    values: [id, workerId],
  });
  return (rowCount ?? 0) > 0;
}

/** The run's tasks created without a parent (svc's path groups, worker/run/review-split.ts) go under its orchestrator's agent task. */
export async function adoptOrphanTasks(db: Queryable, invocationId: string, parentId: string): Promise<void> {
  await db.query(
    "UPDATE svc.tasks SET parent_id = $2 WHERE invocation_id = $1 AND spec IS NOT NULL AND parent_id IS NULL",
    [invocationId, parentId],
  );
}

export async function setTaskTarget(db: Queryable, id: string, target: string): Promise<void> {
  await db.query("UPDATE svc.tasks SET target = $2 WHERE id = $1", [id, target]);
}

/** Ends a task this worker holds; false when it was cancelled or taken over meanwhile. */
export async function finishOrchestratedTask(
  db: Queryable,
  id: string,
  workerId: string,
  end: {
    status: "completed" | "failed";
    result?: unknown;
    diagnostic?: Diagnostic | null;
    /** what its agent's attempts used, summed */
    usage?: TokenUsage;
  },
): Promise<boolean> {
  const { rowCount } = await db.query({
    name: "svc_finish_orchestrated_task",
    text: `UPDATE svc.tasks SET status = $3, result = $4, diagnostic = $5, usage = $6, finished_at = now()
      WHERE id = $1 AND worker_id = $2 AND status = 'running'`,
    values: [
      id,
      workerId,
      end.status,
      end.result === undefined ? null : JSON.stringify(end.result),
      end.diagnostic ? JSON.stringify(end.diagnostic) : null,
      end.usage ? JSON.stringify(end.usage) : null,
    ],
  });
  return (rowCount ?? 0) > 0;
}

/** Back to `queued` (a shutdown took it back) without spending an attempt; the caller sends its job. */
export async function releaseOrchestratedTask(db: Queryable, id: string, workerId: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE svc.tasks SET status = 'queued', worker_id = NULL, heartbeat_at = NULL,
            attempts = greatest(attempts - 1, 0)
      WHERE id = $1 AND worker_id = $2 AND status = 'running'`,
    [id, workerId],
  );
  return (rowCount ?? 0) > 0;
}

/** Running tasks whose holder stopped heartbeating; locked so concurrent reapers split them. */
export async function lockStaleTasks(
  db: Queryable,
  staleAfterMs: number,
  limit = 100,
): Promise<{ id: string; invocationId: string; attempts: number; target: string | null; shadow: boolean }[]> {
  const { rows } = await db.query(
    `SELECT id, invocation_id AS "invocationId", attempts, target,
            (SELECT i.shadow FROM svc.invocations i WHERE i.id = svc.tasks.invocation_id) AS shadow
       FROM svc.tasks
      WHERE status = 'running' AND spec IS NOT NULL
        AND heartbeat_at < now() - make_interval(secs => $1::double precision / 1000)
      ORDER BY heartbeat_at LIMIT $2
      FOR UPDATE SKIP LOCKED`,
    [staleAfterMs, limit],
  );
  return rows;
}

/** A lost task: `queued` again (its job is sent by the caller), or failed once out of attempts. */
export async function reapTask(db: Queryable, id: string, lost: Diagnostic | null): Promise<void> {
  if (lost)
    await db.query(
      `UPDATE svc.tasks SET status = 'failed', diagnostic = $2, finished_at = now(), worker_id = NULL
        WHERE id = $1`,
      [id, JSON.stringify(lost)],
    );
  else
    await db.query(
      "UPDATE svc.tasks SET status = 'queued', worker_id = NULL, heartbeat_at = NULL WHERE id = $1",
      [id],
    );
}
