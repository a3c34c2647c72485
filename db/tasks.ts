import type { Diagnostic } from "../shared/diagnostics.ts";
import { type NewToken, tokenInsert, tokenRevoke } from "./api_tokens.ts";
import { artifactUpsert, type NewArtifact } from "./artifacts.ts";
import { type InvocationKnowledge, knowledgeUpdate } from "./invocation-knowledge.ts";
import type { Queryable } from "./queryable.ts";

/**
 * What an agent attempt's model calls used, as the worker's gateway read it from the model API's
 * answers (worker/gateway/): input tokens (cached included), output tokens, and, when known, the
 * cache's share, the model requests and their price in USD (from the target's `price`).
 */
export interface TokenUsage {
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens?: number;
  cache_write_tokens?: number;
  requests?: number;
  cost_usd?: number;
}

export type TaskKind = "checkout" | "setup" | "agent" | "result_check" | "output";
export type TaskStatus = "running" | "completed" | "failed" | "skipped";
// an orchestrator's tasks also go pending, queued and cancelled (db/orchestrated-tasks.ts)

export interface TaskRow {
  id: string;
  invocation_id: string;
  kind: TaskKind;
  name: string;
  seq: number;
  status: TaskStatus;
  exit_code: number | null;
  diagnostic: Diagnostic | null;
  usage: TokenUsage | null;
  started_at: Date;
  finished_at: Date | null;
}

/**
 * Starts a task. An agent's task start also stores the run token its agent gets (`token`) and, on
 * the run's first agent task, what knowledge the run was given (`knowledge`), in the same
 * statement: one round trip for all three.
 */
export async function startTask(
  db: Queryable,
  row: { id: string; invocationId: string; kind: TaskKind; name: string; seq: number },
  also: { token?: NewToken; knowledge?: InvocationKnowledge } = {},
): Promise<void> {
  const values: unknown[] = [row.id, row.invocationId, row.kind, row.name, row.seq];
  const parts: string[] = [];
  const names = ["svc_start_task"];
  if (also.token) {
    const stored = tokenInsert(also.token, values.length + 1);
    parts.push(`token AS (${stored.text})`);
    values.push(...stored.values);
    names.push("with_token");
  }
  if (also.knowledge) {
    values.push(JSON.stringify(also.knowledge));
    parts.push(`knowledge AS (${knowledgeUpdate(2, values.length)})`);
    names.push("with_knowledge");
  }
  const insert =
    "INSERT INTO svc.tasks (id, invocation_id, kind, name, seq, status) VALUES ($1, $2, $3, $4, $5, 'running')";
  await db.query({
    name: names.join("_"),
    text: parts.length > 0 ? `WITH ${parts.join(", ")} ${insert}` : insert,
    values,
  });
}

export interface TaskEnd {
  status: Exclude<TaskStatus, "running">;
  exitCode?: number | null;
  diagnostic?: Diagnostic | null;
  /** the tokens an agent attempt used, when its runtime reported them (finishTask only) */
  usage?: TokenUsage;
}

function endValues(end: TaskEnd): unknown[] {
  return [end.status, end.exitCode ?? null, end.diagnostic ? JSON.stringify(end.diagnostic) : null];
}

/** A task that started and ended at once (the result check), with its artifact. */
export interface RecordedTask {
  row: { id: string; invocationId: string; kind: TaskKind; name: string; seq: number };
  end: TaskEnd;
  artifact: NewArtifact;
}

/**
 * Ends a task, and in the same statement records its artifact (log, transcript), revokes the token
 * its agent held (`revoke`, a token id), and records the task that follows it at once (`followedBy`: the
 * agent's result check). The statements of a run's path are named, so each connection parses and
 * plans them once.
 */
export async function finishTask(
  db: Queryable,
  id: string,
  end: TaskEnd,
  also: { artifact?: NewArtifact; revoke?: string; followedBy?: RecordedTask } = {},
): Promise<void> {
  const { artifact, revoke, followedBy } = also;
  const values = [id, ...endValues(end), end.usage ? JSON.stringify(end.usage) : null];
  const parts: string[] = [];
  const names = ["svc_finish_task"];
  // only a task still running ends here: one the reaper closed (its worker was judged lost and the
  // run went to another attempt) keeps its `worker_lost`, and its late artifact does not replace
  // the new attempt's artifact of the same name
  const stillRunning = "EXISTS (SELECT 1 FROM svc.tasks WHERE id = $1 AND status = 'running')";
  if (artifact) {
    const insert = artifactUpsert(artifact, values.length + 1, stillRunning);
    parts.push(`artifact AS (${insert.text})`);
    values.push(...insert.values);
    names.push("with_artifact");
  }
  if (revoke) {
    // revoked whatever the task's status: the token must not outlive its agent
    values.push(revoke);
    parts.push(`revoked AS (${tokenRevoke(values.length)})`);
    names.push("revoking");
  }
  if (followedBy) {
    // the task after it, and its artifact, only as this task's end is: on the attempt that still
    // holds the run. The artifact's task reference is checked at the end of the statement
    const { row } = followedBy;
    const first = values.length + 1;
    values.push(row.id, row.invocationId, row.kind, row.name, row.seq, ...endValues(followedBy.end));
    // typed: in INSERT … SELECT, Postgres does not take parameter types from the target columns
    const types = ["text", "text", "text", "text", "integer", "text", "integer", "jsonb"];
    const taskValues = types.map((type, index) => `$${first + index}::${type}`).join(", ");
    parts.push(`recorded AS (
       INSERT INTO svc.tasks (id, invocation_id, kind, name, seq, status, exit_code, diagnostic, finished_at)
       SELECT ${taskValues}, now() WHERE ${stillRunning})`);
    const insert = artifactUpsert(followedBy.artifact, values.length + 1, stillRunning);
    parts.push(`recorded_artifact AS (${insert.text})`);
    values.push(...insert.values);
    names.push("followed_by_task");
  }
  const update =
    "UPDATE svc.tasks SET status = $2, exit_code = $3, diagnostic = $4, usage = $5, finished_at = now() WHERE id = $1 AND status = 'running'";
  await db.query({
    name: names.join("_"),
    text: parts.length > 0 ? `WITH ${parts.join(", ")} ${update}` : update,
    values,
  });
}

/**
 * Tasks left `running` by a worker that vanished are closed when its invocation is reaped. An
 * orchestrator's tasks (with a `spec`) are not: other workers hold them (db/orchestrated-tasks.ts).
 */
export async function failOpenTasks(
  db: Queryable,
  invocationId: string,
  diagnostic: Diagnostic,
): Promise<void> {
  await db.query(
    `UPDATE svc.tasks SET status = 'failed', diagnostic = $2, finished_at = now()
      WHERE invocation_id = $1 AND status = 'running' AND spec IS NULL`,
    [invocationId, JSON.stringify(diagnostic)],
  );
}

/** Closes the run's own tasks that stopped without finishing (a cancellation) as `skipped`. */
export async function closeOpenTasks(
  db: Queryable,
  invocationId: string,
  diagnostic: Diagnostic,
): Promise<void> {
  await db.query(
    `UPDATE svc.tasks SET status = 'skipped', diagnostic = $2, finished_at = now()
      WHERE invocation_id = $1 AND status = 'running' AND spec IS NULL`,
    [invocationId, JSON.stringify(diagnostic)],
  );
}

/** How long one finished setup step or agent run took, with the invocation's target. */
export interface TaskDuration {
  kind: string;
  status: string;
  target: string | null;
  seconds: number;
}

/**
 * The durations of the run's finished setup and agent tasks (one indexed query), read back at the
 * end of a run for the worker's duration histograms (worker/metrics.ts).
 */
export async function listTaskDurations(db: Queryable, invocationId: string): Promise<TaskDuration[]> {
  const { rows } = await db.query<TaskDuration>(
    `SELECT t.kind, t.status, i.target, extract(epoch FROM t.finished_at - t.started_at)::float8 AS seconds
       FROM svc.tasks t JOIN svc.invocations i ON i.id = t.invocation_id
      WHERE t.invocation_id = $1 AND t.kind IN ('setup', 'agent') AND t.finished_at IS NOT NULL`,
    [invocationId],
  );
  return rows;
}

/**
 * The usage recorded so far by the tasks of an invocation (its agent attempts and orchestrated
 * tasks), by task: what a budget's running total starts from (worker/gateway/ledger.ts).
 */
export async function listTaskUsage(
  db: Queryable,
  invocationId: string,
): Promise<{ id: string; usage: TokenUsage }[]> {
  const { rows } = await db.query<{ id: string; usage: TokenUsage }>({
    name: "svc_task_usage",
    text: "SELECT id, usage FROM svc.tasks WHERE invocation_id = $1 AND usage IS NOT NULL",
    values: [invocationId],
  });
  return rows;
}
