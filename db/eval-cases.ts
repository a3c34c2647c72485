import { newId } from "../shared/ids.ts";
import { Conditions } from "./conditions.ts";
import type { Queryable } from "./queryable.ts";

/**
 * Curated eval cases: a finished run the team marked with the outcome it expected. A case copies
 * the event, pipeline, version, target and outcome it needs, so retention of the run leaves it whole.
 */
export type Outcome = "pass" | "fail";

export interface EvalCase {
  id: string;
  invocationId: string | null;
  pipeline: string;
  pipelineVersion: string | null;
  target: string | null;
  event: { kind: string; source: string; name: string; payload: unknown };
  observed: Outcome;
  observedCode: string | null;
  durationMs: number | null;
  result: unknown;
  expected: Outcome;
  expectedResult: Record<string, unknown> | null;
  notes: string;
  tags: string[];
  createdBy: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** What a case copies from its run, read by readFinishedRun. */
export interface FinishedRun {
  invocationId: string;
  status: string;
  pipeline: string;
  pipelineVersion: string | null;
  target: string | null;
  code: string | null;
  durationMs: number | null;
  result: unknown;
  /** null for an invocation submitted to a workload (POST /workloads/:id/invocations): no event fired it */
  eventKind: string | null;
  eventSource: string | null;
  eventName: string | null;
  payload: unknown;
}

const COLUMNS = `id, invocation_id AS "invocationId", pipeline, pipeline_version AS "pipelineVersion", target,
  jsonb_build_object('kind', event_kind, 'source', event_source, 'name', event_name, 'payload', payload) AS event,
  observed, observed_code AS "observedCode", duration_ms AS "durationMs", result, expected,
  expected_result AS "expectedResult", notes, tags, created_by AS "createdBy",
  created_at AS "createdAt", updated_at AS "updatedAt"`;

/**
 * The run behind an invocation, with the event that fired it; a replay counts as the event it
 * replayed (kind, source and name of the original, which replays copy the payload of).
 */
export async function readFinishedRun(db: Queryable, invocationId: string): Promise<FinishedRun | undefined> {
  const { rows } = await db.query<FinishedRun>(
    `SELECT i.id AS "invocationId", i.status, w.pipeline, w.pipeline_version AS "pipelineVersion", i.target,
            i.diagnostic->>'code' AS code,
            (extract(epoch FROM i.finished_at - i.started_at) * 1000)::float8 AS "durationMs", i.result,
            coalesce(o.kind, t.kind) AS "eventKind", coalesce(o.source, t.source) AS "eventSource",
            coalesce(o.event_name, t.event_name) AS "eventName", t.payload
       FROM svc.invocations i
       JOIN svc.workloads w ON w.id = i.workload_id
       LEFT JOIN svc.triggers t ON t.id = w.trigger_id
       LEFT JOIN svc.triggers o ON o.id = t.replay_of
      WHERE i.id = $1`,
    [invocationId],
  );
  return rows[0];
}

export interface NewEvalCase {
  run: FinishedRun & { eventKind: string; eventSource: string; eventName: string };
  observed: Outcome;
  expected: Outcome;
  expectedResult: Record<string, unknown> | null;
  notes: string;
  tags: string[];
  createdBy: string | null;
}

export async function insertEvalCase(db: Queryable, input: NewEvalCase): Promise<EvalCase> {
  const { run } = input;
  const { rows } = await db.query<EvalCase>(
    `INSERT INTO svc.eval_cases (id, invocation_id, pipeline, pipeline_version, target, event_kind, event_source,
       event_name, payload, observed, observed_code, duration_ms, result, expected, expected_result, notes, tags, created_by)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
     RETURNING ${COLUMNS}`,
    [
      newId("evalCase"),
      run.invocationId,
      run.pipeline,
      run.pipelineVersion,
      run.target,
      run.eventKind,
      run.eventSource,
      run.eventName,
      JSON.stringify(run.payload),
      input.observed,
      run.code,
      run.durationMs,
      run.result === null || run.result === undefined ? null : JSON.stringify(run.result),
      input.expected,
      input.expectedResult === null ? null : JSON.stringify(input.expectedResult),
      input.notes,
      input.tags,
      input.createdBy,
    ],
  );
  return rows[0]!;
}

export interface EvalCaseFilter {
  pipeline?: string;
  tag?: string;
  expected?: Outcome;
  /** only these cases (an eval run's selection) */
  ids?: string[];
  limit?: number;
}

/** Newest first. */
export async function listEvalCases(db: Queryable, filter: EvalCaseFilter = {}): Promise<EvalCase[]> {
  const conditions = new Conditions();
  const add = conditions.add.bind(conditions);
  if (filter.pipeline) add((n) => `pipeline = ${n}`, filter.pipeline);
  if (filter.tag) add((n) => `${n} = ANY (tags)`, filter.tag);
  if (filter.expected) add((n) => `expected = ${n}`, filter.expected);
  if (filter.ids) add((n) => `id = ANY (${n}::text[])`, filter.ids);
  const limit = conditions.param(Math.min(Math.max(filter.limit ?? 100, 1), 1000));
  const { rows } = await db.query<EvalCase>(
    `SELECT ${COLUMNS} FROM svc.eval_cases ${conditions.where()} ORDER BY created_at DESC, id LIMIT ${limit}`,
    conditions.params,
  );
  return rows;
}

export async function getEvalCase(db: Queryable, id: string): Promise<EvalCase | undefined> {
  const { rows } = await db.query<EvalCase>(`SELECT ${COLUMNS} FROM svc.eval_cases WHERE id = $1`, [id]);
  return rows[0];
}

export interface EvalCasePatch {
  expected?: Outcome;
  expectedResult?: Record<string, unknown> | null;
  notes?: string;
  tags?: string[];
}

/** The changed case, or undefined when there is none with that id. */
export async function updateEvalCase(
  db: Queryable,
  id: string,
  patch: EvalCasePatch,
): Promise<EvalCase | undefined> {
  const { rows } = await db.query<EvalCase>(
    `UPDATE svc.eval_cases
        SET expected = coalesce($2, expected),
            expected_result = CASE WHEN $3 THEN $4::jsonb ELSE expected_result END,
            notes = coalesce($5, notes),
            tags = coalesce($6, tags),
            updated_at = now()
      WHERE id = $1
      RETURNING ${COLUMNS}`,
    [
      id,
      patch.expected ?? null,
      patch.expectedResult !== undefined,
      patch.expectedResult ? JSON.stringify(patch.expectedResult) : null,
      patch.notes ?? null,
      patch.tags ?? null,
    ],
  );
  return rows[0];
}

export async function deleteEvalCase(db: Queryable, id: string): Promise<boolean> {
  const { rowCount } = await db.query("DELETE FROM svc.eval_cases WHERE id = $1", [id]);
  return (rowCount ?? 0) > 0;
}
