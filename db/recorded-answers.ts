import type { Queryable } from "./queryable.ts";

/**
 * Recorded model answers (issue 57, migration 106): what the worker's gateway answered the model
 * calls of a live run whose pipeline sets `record_answers: true`, and how it answered a backtest's
 * candidate from them (`replay_answers`). docs/evals.md, "Replayed model answers".
 */

/** How the gateway treats an agent attempt's model calls. */
export interface AnswerPlan {
  /** the run is a candidate run of a backtest started with `replay_answers` */
  replay: boolean;
  /** the live run of the replayed event that has recorded answers (replay only) */
  liveInvocation: string | null;
  /** the run is a live one (not a shadow, outputs not held): its answers may be recorded */
  live: boolean;
}

export async function answerPlanOf(db: Queryable, invocationId: string): Promise<AnswerPlan | undefined> {
  const { rows } = await db.query<{ shadow: boolean; held: boolean; replay: boolean; live: string | null }>(
    `SELECT i.shadow, t.hold_outputs AS held, coalesce(b.replay_answers, false) AS replay,
            (SELECT li.id FROM svc.workloads lw JOIN svc.invocations li ON li.workload_id = lw.id
              WHERE b.replay_answers AND lw.trigger_id = bi.replayed_trigger_id AND lw.pipeline = w.pipeline
                AND NOT li.shadow
                AND EXISTS (SELECT 1 FROM svc.recorded_answers r WHERE r.invocation_id = li.id)
              ORDER BY li.created_at DESC LIMIT 1) AS live
       FROM svc.invocations i
       JOIN svc.workloads w ON w.id = i.workload_id
       JOIN svc.triggers t ON t.id = w.trigger_id
       LEFT JOIN svc.backtests b ON b.id = t.backtest_id
       LEFT JOIN svc.backtest_items bi ON bi.backtest_id = t.backtest_id AND bi.trigger_id = t.id
      WHERE i.id = $1`,
    [invocationId],
  );
  const row = rows[0];
  if (!row) return undefined;
  return { replay: row.replay, liveInvocation: row.live, live: !row.shadow && !row.held };
}

export interface RecordedAnswer {
  call: number;
  api: string;
  path: string;
  requestSha256: string;
  status: number;
  headers: Record<string, string | string[]>;
  body: Buffer;
  complete: boolean;
}

/**
 * The answers recorded for the task of `liveInvocation` that matches `taskId` of the replaying run,
 * in call order: the run's own agent (a task named `agent on <target>`) matches the live run's,
 * whatever its target; an orchestrated task matches the live task of the same name. Of several
 * attempts (a failover), the last one recorded.
 */
export async function recordedAnswersFor(
  db: Queryable,
  liveInvocation: string,
  taskId: string,
): Promise<RecordedAnswer[]> {
  const { rows } = await db.query<{
    call: number;
    api: string;
    path: string;
    request_sha256: string;
    status: number;
    headers: Record<string, string | string[]>;
    body: Buffer;
    complete: boolean;
  }>(
    `WITH mine AS (
       SELECT CASE WHEN name LIKE 'agent on %' THEN 'agent' ELSE name END AS key FROM svc.tasks WHERE id = $2
     ), pick AS (
       SELECT t.id FROM svc.tasks t JOIN mine
           ON mine.key = CASE WHEN t.name LIKE 'agent on %' THEN 'agent' ELSE t.name END
        WHERE t.invocation_id = $1
          AND EXISTS (SELECT 1 FROM svc.recorded_answers r WHERE r.task_id = t.id)
        ORDER BY t.seq DESC, t.started_at DESC LIMIT 1
     )
     SELECT r.call, r.api, r.path, r.request_sha256, r.status, r.headers, r.body, r.complete
       FROM svc.recorded_answers r JOIN pick ON pick.id = r.task_id
      ORDER BY r.call`,
    [liveInvocation, taskId],
  );
  return rows.map((row) => ({
    call: row.call,
    api: row.api,
    path: row.path,
    requestSha256: row.request_sha256,
    status: row.status,
    headers: row.headers,
    body: row.body,
    complete: row.complete,
  }));
}

export async function recordAnswer(
  db: Queryable,
  answer: RecordedAnswer & { invocationId: string; taskId: string; target: string },
): Promise<void> {
  await db.query(
    `INSERT INTO svc.recorded_answers
       (invocation_id, task_id, call, api, path, target, request_sha256, status, headers, body, complete)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
     ON CONFLICT (task_id, call) DO NOTHING`,
    [
      answer.invocationId,
      answer.taskId,
      answer.call,
      answer.api,
      answer.path,
      answer.target,
      answer.requestSha256,
      answer.status,
      JSON.stringify(answer.headers),
      answer.body,
      answer.complete,
    ],
  );
}

export type ReplayOutcome = "replayed" | "diverged" | "missing";

export async function recordReplayedCall(
  db: Queryable,
  call: { invocationId: string; taskId: string; call: number; outcome: ReplayOutcome },
): Promise<void> {
  await db.query(
    `INSERT INTO svc.replayed_calls (invocation_id, task_id, call, outcome) VALUES ($1, $2, $3, $4)
     ON CONFLICT (task_id, call) DO NOTHING`,
    [call.invocationId, call.taskId, call.call, call.outcome],
  );
}

/** Model calls answered from a recording, by invocation: `replayed` counts the diverged ones too. */
export interface ReplayCounts {
  replayed: number;
  diverged: number;
  missing: number;
}

export async function replayCounts(db: Queryable, invocations: string[]): Promise<Map<string, ReplayCounts>> {
  const { rows } = await db.query<{ invocation_id: string } & ReplayCounts>(
    `SELECT invocation_id,
            count(*) FILTER (WHERE outcome <> 'missing')::int AS replayed,
            count(*) FILTER (WHERE outcome = 'diverged')::int AS diverged,
            count(*) FILTER (WHERE outcome = 'missing')::int AS missing
       FROM svc.replayed_calls WHERE invocation_id = ANY($1::text[]) GROUP BY invocation_id`,
    [invocations],
  );
  return new Map(
    rows.map((row) => [
      row.invocation_id,
      { replayed: row.replayed, diverged: row.diverged, missing: row.missing },
    ]),
  );
}

/** Of `triggers`, those on which a live run of `pipeline` recorded model answers. */
export async function triggersWithRecordedAnswers(
  db: Queryable,
  pipeline: string,
  triggers: string[],
): Promise<Set<string>> {
  const { rows } = await db.query<{ trigger_id: string }>(
    `SELECT DISTINCT w.trigger_id FROM svc.workloads w JOIN svc.invocations i ON i.workload_id = w.id
      WHERE w.trigger_id = ANY($1::text[]) AND w.pipeline = $2 AND NOT i.shadow
        AND EXISTS (SELECT 1 FROM svc.recorded_answers r WHERE r.invocation_id = i.id)`,
    [triggers, pipeline],
  );
  return new Set(rows.map((row) => row.trigger_id));
}

/** How many model answers each of `invocations` has recorded. */
export async function recordedCounts(db: Queryable, invocations: string[]): Promise<Map<string, number>> {
  const { rows } = await db.query<{ invocation_id: string; n: number }>(
    `SELECT invocation_id, count(*)::int AS n FROM svc.recorded_answers
      WHERE invocation_id = ANY($1::text[]) GROUP BY invocation_id`,
    [invocations],
  );
  return new Map(rows.map((row) => [row.invocation_id, row.n]));
}

/** Recorded answers are kept as long as transcripts (workspaces.transcriptRetentionDays). */
export async function expireRecordedAnswers(db: Queryable, olderThanDays: number): Promise<number> {
  const { rowCount } = await db.query(
    "DELETE FROM svc.recorded_answers WHERE created_at < now() - make_interval(days => $1)",
    [olderThanDays],
  );
  return rowCount ?? 0;
}
