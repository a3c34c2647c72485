import type { PullHead } from "../shared/codehost/github-reads.ts";
import type { Diagnostic } from "../shared/diagnostics.ts";
import type { Queryable } from "./queryable.ts";

export type InvocationStatus = "queued" | "running" | "completed" | "failed" | "cancelled";

export interface InvocationRow {
  id: string;
  workload_id: string;
  status: InvocationStatus;
  diagnostic: Diagnostic | null;
  target: string | null;
  attempts: number;
  result: unknown;
  worker_id: string | null;
  heartbeat_at: Date | null;
  started_at: Date | null;
  finished_at: Date | null;
  created_at: Date;
  updated_at: Date;
  /** the concurrency group's key (db/concurrency-groups.ts); null: the pipeline declares none */
  concurrency_group: string | null;
  /** the revision its event names, read by a later run of the group as PREVIOUS_SHA */
  head_sha: string | null;
  /** what it would publish is recorded as its artifact instead (migration 100) */
  outputs_held: boolean;
  /** it runs its pipeline's shadow candidate (migration 103), never the live version */
  shadow: boolean;
}

export interface QueuedRun {
  workloadId: string;
  triggerId: string;
  pipeline: string;
  /** the pipeline's `version` as configured when the run was created */
  pipelineVersion: string;
  owner: string | null;
  workspace: string;
  invocationId: string;
  target: string | null;
  /** the concurrency group's key; absent or null: none */
  group?: string | null;
  headSha?: string | null;
  /** its outputs are held back (db/migrations/100_held_outputs.sql) */
  outputsHeld?: boolean;
  /** it runs the pipeline's shadow candidate (db/migrations/103_shadow_runs.sql) */
  shadow?: boolean;
}

/** The queued runs of a whole dispatch batch: their workloads and invocations in one statement. */
export async function insertQueuedRuns(db: Queryable, runs: QueuedRun[]): Promise<void> {
  if (runs.length === 0) return;
  const column = <K extends keyof QueuedRun>(key: K) => runs.map((run) => run[key] ?? null);
  await db.query(
    `WITH w AS (
       INSERT INTO svc.workloads (id, trigger_id, pipeline, owner, status, workspace, pipeline_version)
       SELECT id, trigger_id, pipeline, owner, 'open', workspace, pipeline_version
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $8::text[])
           AS r(id, trigger_id, pipeline, owner, workspace, pipeline_version))
     INSERT INTO svc.invocations (id, workload_id, status, target, concurrency_group, head_sha, outputs_held, shadow)
     SELECT id, workload_id, 'queued', target, concurrency_group, head_sha, coalesce(held, false), coalesce(shadow, false)
       FROM unnest($6::text[], $1::text[], $7::text[], $9::text[], $10::text[], $11::boolean[], $12::boolean[])
         AS r(id, workload_id, target, concurrency_group, head_sha, held, shadow)`,
    [
      column("workloadId"),
      column("triggerId"),
      column("pipeline"),
      column("owner"),
      column("workspace"),
      column("invocationId"),
      column("target"),
      column("pipelineVersion"),
      column("group"),
      column("headSha"),
      column("outputsHeld"),
      column("shadow"),
    ],
  );
}

/**
 * Dispatch's in-process fast path: the invocation is created already held by the dispatching
 * worker (inside the dispatch transaction, so nobody else can see it queued), together with its
 * workload and the trigger's move to `running`, in one statement; the worker then runs it without
 * a lane job. A crash before its first heartbeat leaves a `running` row whose heartbeat goes
 * stale, and the reaper queues it again like any lost run.
 */
export async function insertWorkloadWithClaimedInvocation(
  db: Queryable,
  row: QueuedRun & { workerId: string },
): Promise<{ invocation: InvocationRow; breakerOpenUntil: Date | null }> {
  // the trigger moves to `running` in the same statement: dispatch's common path costs one round
  // trip. It reads the pipeline's open circuit breaker too, as claimRuns does, for the run's gate
  const { rows } = await db.query<InvocationRow & { breaker_open_until: Date | null }>({
    name: "svc_insert_claimed_run",
    text: `WITH running AS (
       UPDATE svc.triggers SET status = 'running', diagnostic = NULL, updated_at = now() WHERE id = $2),
     w AS (
       INSERT INTO svc.workloads (id, trigger_id, pipeline, owner, status, workspace, pipeline_version)
       VALUES ($1, $2, $3, $4, 'open', $5, $9) RETURNING id)
     INSERT INTO svc.invocations (id, workload_id, status, target, worker_id, heartbeat_at, attempts, started_at,
                                  concurrency_group, head_sha, outputs_held, shadow)
     SELECT $6, w.id, 'running', $7, $8, now(), 1, now(), $10, $11, $12, $13 FROM w
     RETURNING *, (SELECT b.open_until FROM svc.circuit_breakers b WHERE b.pipeline = $3 AND b.open_until > now())
       AS breaker_open_until`,
    values: [
      row.workloadId,
      row.triggerId,
      row.pipeline,
      row.owner,
      row.workspace,
      row.invocationId,
      row.target,
      row.workerId,
      row.pipelineVersion,
      row.group ?? null,
      row.headSha ?? null,
      row.outputsHeld ?? false,
      row.shadow ?? false,
    ],
  });
  const { breaker_open_until: breakerOpenUntil, ...invocation } = rows[0]!;
  return { invocation, breakerOpenUntil };
}

/** The trigger fields a run resolves its event from (worker/queue/dispatch.ts resolveEvent). */
export interface TriggerEvent {
  kind: string;
  source: string;
  event_name: string;
  payload: unknown;
  replay_of: string | null;
  /** see LockedTrigger.author_association */
  author_association?: "owner" | "member" | "none" | null;
  /** see LockedTrigger.pull_head */
  pull_head?: PullHead | null;
}

/** A run claimed from its lane, with the rows it runs from, read by the claim itself. */
export interface ClaimedRun {
  invocation: InvocationRow;
  workload: { id: string; trigger_id: string | null; pipeline: string };
  /** null: the workload has no trigger (or it is gone) */
  trigger: TriggerEvent | null;
  /** when the pipeline's circuit breaker is open, the time it closes; null: closed */
  breakerOpenUntil: Date | null;
}

/**
 * Claims the invocations a lane fetch returned, in one statement, and returns each with its
 * workload, its trigger's event and its pipeline's open circuit breaker, so the run reads none of
 * them again (three round trips fewer a run).
 * Rows that are not claimable (another worker holds them, cancelled, finished) are not returned.
 */
export async function claimRuns(
  db: Queryable,
  ids: string[],
  workerId: string,
  staleAfterMs: number,
  /** the concurrency groups whose locks this transaction holds (db/concurrency-groups.ts lockGroups) */
  lockedGroups: readonly string[] = [],
): Promise<ClaimedRun[]> {
  if (ids.length === 0) return [];
  // one run (the common claim: one slot came free) by a statement of its own. Postgres plans a
  // statement by `id = ANY($1)` again at every call, as its generic plan is estimated for ten ids
  // and dearer than a one-id custom plan (the planning cost as much as the claim itself); by
  // `id = $1`, it plans once per connection
  const byIds =
    ids.length === 1
      ? { name: "svc_claim_run", match: "id = $1", value: ids[0] }
      : { name: "svc_claim_runs", match: "id = ANY($1::text[])", value: ids };
  const { rows } = await db.query<
    InvocationRow & {
      run_pipeline: string;
      run_trigger_id: string | null;
      trigger_kind: string | null;
      trigger_source: string;
      trigger_event_name: string;
      trigger_payload: unknown;
      trigger_replay_of: string | null;
      trigger_author: "owner" | "member" | "none" | null;
      trigger_pull_head: PullHead | null;
      breaker_open_until: Date | null;
    }
  >({
    name: byIds.name,
    // a grouped run only under its group's lock ($4), and only while nothing else of its group runs.
    // Kept short: pg_stat_activity shows only the first 1 KB of a statement, and whoever looks for a
    // blocked claim there (an operator, test/integration/worker/slot-release.test.ts) looks for its join,
    // which starts at byte 966 (hence the shallow indentation): a column more needs a shorter form
    text: `WITH claimed AS (
  UPDATE svc.invocations i
     SET status = 'running', worker_id = $2, heartbeat_at = now(), attempts = attempts + 1,
         started_at = coalesce(started_at, now()), updated_at = now()
   WHERE ${byIds.match}
     AND (status = 'queued'
          OR (status = 'running' AND heartbeat_at < now() - make_interval(secs => $3::double precision / 1000)))
     AND (concurrency_group IS NULL OR (concurrency_group = ANY($4::text[]) AND NOT EXISTS (SELECT
       FROM svc.invocations o WHERE o.concurrency_group = i.concurrency_group AND o.status = 'running' AND o.id <> i.id)))
   RETURNING *)
SELECT c.*, w.pipeline AS run_pipeline, w.trigger_id AS run_trigger_id,
       t.kind AS trigger_kind, t.source AS trigger_source, t.event_name AS trigger_event_name,
       t.payload AS trigger_payload, t.replay_of AS trigger_replay_of,
       t.author_association AS trigger_author, t.pull_head AS trigger_pull_head, b.open_until AS breaker_open_until
  FROM claimed c
  JOIN svc.workloads w ON w.id = c.workload_id
  LEFT JOIN svc.triggers t ON t.id = w.trigger_id
  LEFT JOIN svc.circuit_breakers b ON b.pipeline = w.pipeline AND b.open_until > now()`,
    values: [byIds.value, workerId, staleAfterMs, lockedGroups],
  });
  return rows.map((row) => {
    const {
      run_pipeline: pipeline,
      run_trigger_id: triggerId,
      trigger_kind: kind,
      trigger_source: source,
      trigger_event_name: eventName,
      trigger_payload: payload,
      trigger_replay_of: replayOf,
      trigger_author: author,
      trigger_pull_head: head,
      breaker_open_until: breakerOpenUntil,
      ...invocation
    } = row;
    return {
      invocation,
      workload: { id: invocation.workload_id, trigger_id: triggerId, pipeline },
      trigger:
        kind === null
          ? null
          : {
              ...{ kind, source, event_name: eventName, payload, replay_of: replayOf },
              ...{ author_association: author, pull_head: head },
            },
      breakerOpenUntil,
    };
  });
}

/** The channel on which the API announces a cancelled invocation (payload: its id) after commit. */
export const CANCEL_CHANNEL = "svc_invocation_cancelled";

/** Wakes the worker running `id` so it stops at once; its heartbeat finds the cancellation otherwise. */
export async function notifyInvocationCancelled(db: Queryable, id: string): Promise<void> {
  await db.query("SELECT pg_notify($1, $2)", [CANCEL_CHANNEL, id]);
}

export async function getInvocationStatus(db: Queryable, id: string): Promise<InvocationStatus | undefined> {
  const { rows } = await db.query<{ status: InvocationStatus }>(
    "SELECT status FROM svc.invocations WHERE id = $1",
    [id],
  );
  return rows[0]?.status;
}

/**
 * The pipeline the invocation's workload runs, or undefined when no such invocation exists. The
 * reaper reads it to find an orchestrated run's `maxParallel` before promoting its next tasks.
 */
export async function getInvocationPipeline(db: Queryable, id: string): Promise<string | undefined> {
  const { rows } = await db.query<{ pipeline: string }>(
    "SELECT w.pipeline FROM svc.invocations i JOIN svc.workloads w ON w.id = i.workload_id WHERE i.id = $1",
    [id],
  );
  return rows[0]?.pipeline;
}

/** Returns false when this worker no longer holds the row (another worker took it over). */
export async function heartbeatInvocation(db: Queryable, id: string, workerId: string): Promise<boolean> {
  const { rowCount } = await db.query({
    name: "svc_heartbeat",
    text: "UPDATE svc.invocations SET heartbeat_at = now() WHERE id = $1 AND worker_id = $2 AND status = 'running'",
    values: [id, workerId],
  });
  return (rowCount ?? 0) > 0;
}

export async function setInvocationTarget(db: Queryable, id: string, target: string): Promise<void> {
  await db.query("UPDATE svc.invocations SET target = $2, updated_at = now() WHERE id = $1", [id, target]);
}

/** Ends a run this worker holds; a no-op (false) when the row was taken over meanwhile. */
export async function finishInvocation(
  db: Queryable,
  id: string,
  workerId: string,
  outcome: { status: "completed" | "failed" | "cancelled"; diagnostic: Diagnostic | null; result?: unknown },
  /** row-locks this trigger in the same statement, once the run's end is written (settleLockedTrigger) */
  lockTrigger: string | null = null,
  /**
   * the pipeline whose circuit breaker a completed run resets, in the same statement: a plain
   * UPDATE that leaves a breaker with nothing counted unlocked and unwritten (db/circuit-breakers.ts)
   */
  resetBreaker: string | null = null,
): Promise<boolean> {
  // The trigger's lock is taken only when the run was still held, and after its row was written:
  // reading `finished` runs the UPDATE to its (one) row first, so the run's row is locked before
  // the trigger's, in the order every other writer of both takes them. `locked` is selected only
  // so that Postgres runs it: a plain SELECT in WITH runs only when read. `breaker` locks its row
  // only when it has failures to reset, in no set order with the trigger's: nothing that holds a
  // breaker's row waits for another lock (its other writers are single statements), so no cycle
  const { rows } = await db.query<{ held: boolean }>({
    name: "svc_finish_invocation",
    text: `WITH finished AS (
       UPDATE svc.invocations
          SET status = $3, diagnostic = $4, result = $5, finished_at = now(), updated_at = now()
        WHERE id = $1 AND worker_id = $2 AND status = 'running'
        RETURNING id),
     locked AS (
       SELECT 1 FROM svc.triggers WHERE id = $6 AND EXISTS (SELECT 1 FROM finished) FOR UPDATE),
     breaker AS (
       UPDATE svc.circuit_breakers SET consecutive_failures = 0, updated_at = now()
        WHERE pipeline = $7 AND consecutive_failures <> 0 AND $3 = 'completed'
          AND EXISTS (SELECT 1 FROM finished))
     SELECT EXISTS (SELECT 1 FROM finished) AS held, (SELECT count(*) FROM locked) AS locked`,
    values: [
      id,
      workerId,
      outcome.status,
      outcome.diagnostic ? JSON.stringify(outcome.diagnostic) : null,
      outcome.result === undefined ? null : JSON.stringify(outcome.result),
      lockTrigger,
      resetBreaker,
    ],
  });
  return rows[0]?.held === true;
}

/**
 * Puts a held run back to `queued` (graceful shutdown, or no usable credential) without
 * spending an attempt, so the retry starts from scratch.
 */
export async function releaseInvocation(db: Queryable, id: string, workerId: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE svc.invocations
        SET status = 'queued', worker_id = NULL, heartbeat_at = NULL, attempts = greatest(attempts - 1, 0),
            updated_at = now()
      WHERE id = $1 AND worker_id = $2 AND status = 'running'`,
    [id, workerId],
  );
  return (rowCount ?? 0) > 0;
}

export interface StaleInvocation {
  id: string;
  attempts: number;
  target: string | null;
  workload_id: string;
  concurrency_group: string | null;
  /** a shadow run goes back to its target's shadow lane (shared/queues.ts laneQueue) */
  shadow: boolean;
}

/** Running rows whose holder stopped heartbeating; locked so concurrent reapers split the work. */
export async function lockStaleInvocations(
  db: Queryable,
  staleAfterMs: number,
  limit = 100,
): Promise<StaleInvocation[]> {
  const { rows } = await db.query<StaleInvocation>(
    `SELECT id, attempts, target, workload_id, concurrency_group, shadow FROM svc.invocations
      WHERE status = 'running' AND heartbeat_at < now() - make_interval(secs => $1::double precision / 1000)
      ORDER BY heartbeat_at LIMIT $2
      FOR UPDATE SKIP LOCKED`,
    [staleAfterMs, limit],
  );
  return rows;
}

/**
 * The runs whose pg-boss lease failed (worker/queue/run-leases.ts), locked, if each is still `running` under
 * the worker and attempt that held the lease: a run that finished, was cancelled or was taken over
 * since is not returned, so a late or repeated lost lease changes nothing.
 */
export async function lockLostInvocations(
  db: Queryable,
  leases: readonly { invocationId: string; workerId?: string; attempts: number }[],
): Promise<StaleInvocation[]> {
  if (leases.length === 0) return [];
  // a lane job held as the lease names no worker: every claim of a run counts a new attempt
  const { rows } = await db.query<StaleInvocation>(
    `SELECT i.id, i.attempts, i.target, i.workload_id, i.concurrency_group, i.shadow
       FROM svc.invocations i
       JOIN unnest($1::text[], $2::text[], $3::int[]) AS lost(id, worker_id, attempts)
         ON lost.id = i.id AND lost.attempts = i.attempts
        AND (lost.worker_id IS NULL OR lost.worker_id = i.worker_id)
      WHERE i.status = 'running'
      FOR UPDATE OF i`,
    [
      leases.map((lease) => lease.invocationId),
      leases.map((lease) => lease.workerId ?? null),
      leases.map((lease) => lease.attempts),
    ],
  );
  return rows;
}

export async function requeueInvocation(db: Queryable, id: string): Promise<void> {
  await db.query(
    `UPDATE svc.invocations SET status = 'queued', worker_id = NULL, heartbeat_at = NULL, updated_at = now()
      WHERE id = $1`,
    [id],
  );
}

export async function failLostInvocation(db: Queryable, id: string, diagnostic: Diagnostic): Promise<void> {
  await db.query(
    `UPDATE svc.invocations SET status = 'failed', diagnostic = $2, finished_at = now(), updated_at = now()
      WHERE id = $1`,
    [id, JSON.stringify(diagnostic)],
  );
}

/** Of `ids`, the runs still `running`, each with the worker that holds it (the container sweeper keeps only those). */
export async function runningInvocationWorkers(db: Queryable, ids: string[]): Promise<Map<string, string>> {
  const { rows } = await db.query<{ id: string; worker_id: string }>(
    "SELECT id, worker_id FROM svc.invocations WHERE id = ANY($1) AND status = 'running'",
    [ids],
  );
  return new Map(rows.map((row) => [row.id, row.worker_id]));
}
