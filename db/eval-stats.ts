import type { Queryable } from "./queryable.ts";

/**
 * The reads behind eval statistics and cohort comparison. A run is a finished invocation
 * (`completed` or `failed`; queued, running and cancelled ones have no outcome yet) of a workload
 * whose `pipeline_version` was recorded at dispatch; its duration is finished_at − started_at.
 */

export interface VersionTargetStats {
  version: string | null;
  target: string | null;
  runs: number;
  completed: number;
  outputFailed: number;
  p50Ms: number | null;
  p90Ms: number | null;
  codes: Record<string, number>;
  /** runs whose tasks reported token usage, and the sums over them (0 when none did) */
  usageRuns: number;
  inputTokens: number;
  outputTokens: number;
  /** of the input, read from the provider's cache; and the model requests (gateway-read runs only) */
  cacheReadTokens: number;
  requests: number;
  /** USD, over the runs on targets with a `price`; null when none had one */
  costUsd: number | null;
}

const FINISHED = "i.status IN ('completed', 'failed') AND i.finished_at IS NOT NULL";
// float8: extract() answers numeric, which node-postgres hands over as a string
export const DURATION_MS = "(extract(epoch FROM i.finished_at - i.started_at) * 1000)::float8";

/** Whether any run or curated case names the pipeline (one removed from the configuration keeps them). */
export async function pipelineHasRecords(db: Queryable, pipeline: string): Promise<boolean> {
  const { rows } = await db.query<{ found: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM svc.workloads WHERE pipeline = $1)
         OR EXISTS (SELECT 1 FROM svc.eval_cases WHERE pipeline = $1) AS found`,
    [pipeline],
  );
  return rows[0]?.found ?? false;
}

/** Per pipeline version × target, oldest version first; percentiles interpolate linearly. */
export async function statsByVersionTarget(
  db: Queryable,
  filter: { pipeline: string; since?: Date },
): Promise<VersionTargetStats[]> {
  const { rows } = await db.query<VersionTargetStats>(
    `WITH runs AS (
       SELECT w.pipeline_version AS version, i.target, i.status, i.diagnostic->>'code' AS code,
              ${DURATION_MS} AS duration_ms, w.created_at, u.input_tokens, u.output_tokens,
              u.cache_read_tokens, u.requests, u.cost_usd
         FROM svc.workloads w JOIN svc.invocations i ON i.workload_id = w.id
         -- a run's tokens: every attempt of its agent that reported usage (a failover pays twice)
         LEFT JOIN LATERAL (
           SELECT sum((t.usage->>'input_tokens')::bigint) AS input_tokens,
                  sum((t.usage->>'output_tokens')::bigint) AS output_tokens,
                  sum((t.usage->>'cache_read_tokens')::bigint) AS cache_read_tokens,
                  sum((t.usage->>'requests')::bigint) AS requests,
                  sum((t.usage->>'cost_usd')::float8) AS cost_usd
             FROM svc.tasks t WHERE t.invocation_id = i.id AND t.usage IS NOT NULL) u ON true
        WHERE w.pipeline = $1 AND ${FINISHED} AND ($2::timestamptz IS NULL OR w.created_at >= $2)),
     codes AS (
       SELECT version, target, jsonb_object_agg(code, n) AS codes
         FROM (SELECT version, target, code, count(*)::int AS n FROM runs WHERE code IS NOT NULL
                GROUP BY version, target, code) c
        GROUP BY version, target)
     SELECT r.version, r.target, count(*)::int AS runs,
            (count(*) FILTER (WHERE r.status = 'completed'))::int AS completed,
            (count(*) FILTER (WHERE r.code = 'output_failed'))::int AS "outputFailed",
            percentile_cont(0.5) WITHIN GROUP (ORDER BY r.duration_ms) AS "p50Ms",
            percentile_cont(0.9) WITHIN GROUP (ORDER BY r.duration_ms) AS "p90Ms",
            coalesce((array_agg(c.codes))[1], '{}'::jsonb) AS codes,
            (count(*) FILTER (WHERE r.input_tokens IS NOT NULL))::int AS "usageRuns",
            coalesce(sum(r.input_tokens), 0)::float8 AS "inputTokens",
            coalesce(sum(r.output_tokens), 0)::float8 AS "outputTokens",
            coalesce(sum(r.cache_read_tokens), 0)::float8 AS "cacheReadTokens",
            coalesce(sum(r.requests), 0)::float8 AS requests,
            sum(r.cost_usd)::float8 AS "costUsd"
       FROM runs r LEFT JOIN codes c
         ON c.version IS NOT DISTINCT FROM r.version AND c.target IS NOT DISTINCT FROM r.target
      GROUP BY r.version, r.target
      ORDER BY min(r.created_at), r.version, r.target`,
    [filter.pipeline, filter.since ?? null],
  );
  return rows;
}

/**
 * A set of runs to compare: by version, target, creation time, an eval run's replays, the original
 * runs of the cases an eval run replayed, or the original runs of curated cases (by tag).
 */
export type Cohort =
  | { kind: "version"; version: string }
  | { kind: "target"; target: string }
  | { kind: "dates"; from: Date; to: Date }
  | { kind: "run"; run: string }
  | { kind: "original"; run: string }
  | { kind: "cases"; tag?: string };

/** One run of a cohort; `expected` is set when the run stands for a curated case. */
export interface CohortRun {
  completed: boolean;
  code: string | null;
  durationMs: number | null;
  result: unknown;
  expected: "pass" | "fail" | null;
  expectedResult: Record<string, unknown> | null;
}

const MAX_COHORT_RUNS = 20_000;

/** The cohort's runs of `pipeline`, newest first, at most MAX_COHORT_RUNS. */
export async function readCohort(db: Queryable, pipeline: string, cohort: Cohort): Promise<CohortRun[]> {
  if (cohort.kind === "cases" || cohort.kind === "original") {
    const [clause, value] =
      cohort.kind === "cases"
        ? ["($2::text IS NULL OR $2 = ANY (c.tags))", cohort.tag ?? null]
        : ["c.id IN (SELECT case_id FROM svc.eval_run_cases WHERE eval_run_id = $2)", cohort.run];
    const { rows } = await db.query<CohortRun>(
      `SELECT c.observed = 'pass' AS completed, c.observed_code AS code, c.duration_ms AS "durationMs", c.result,
              c.expected, c.expected_result AS "expectedResult"
         FROM svc.eval_cases c WHERE c.pipeline = $1 AND ${clause}
        ORDER BY c.created_at DESC LIMIT ${MAX_COHORT_RUNS}`,
      [pipeline, value],
    );
    return rows;
  }
  const where =
    cohort.kind === "version"
      ? ["w.pipeline_version = $2", cohort.version]
      : cohort.kind === "target"
        ? ["i.target = $2", cohort.target]
        : cohort.kind === "run"
          ? ["t.eval_run_id = $2", cohort.run]
          : ["w.created_at >= $2 AND w.created_at < $3", cohort.from, cohort.to];
  const [clause, ...values] = where as [string, ...unknown[]];
  const { rows } = await db.query<CohortRun>(
    `SELECT i.status = 'completed' AS completed, i.diagnostic->>'code' AS code, ${DURATION_MS} AS "durationMs",
            i.result, c.expected, c.expected_result AS "expectedResult"
       FROM svc.workloads w
       JOIN svc.invocations i ON i.workload_id = w.id
       LEFT JOIN svc.triggers t ON t.id = w.trigger_id
       LEFT JOIN svc.eval_run_cases rc ON rc.trigger_id = t.id AND rc.eval_run_id = t.eval_run_id
       LEFT JOIN svc.eval_cases c ON c.id = rc.case_id
      WHERE w.pipeline = $1 AND ${FINISHED} AND ${clause}
      ORDER BY w.created_at DESC LIMIT ${MAX_COHORT_RUNS}`,
    [pipeline, ...values],
  );
  return rows;
}

export interface DailyRate {
  version: string | null;
  day: string;
  runs: number;
  completed: number;
}

/** Runs and completions per version per UTC day, for the chart of /ui/evals. */
export async function dailyCompletedByVersion(
  db: Queryable,
  filter: { pipeline: string; since: Date },
): Promise<DailyRate[]> {
  const { rows } = await db.query<DailyRate>(
    `SELECT w.pipeline_version AS version, to_char(date_trunc('day', w.created_at AT TIME ZONE 'UTC'), 'YYYY-MM-DD') AS day,
            count(*)::int AS runs, (count(*) FILTER (WHERE i.status = 'completed'))::int AS completed
       FROM svc.workloads w JOIN svc.invocations i ON i.workload_id = w.id
      WHERE w.pipeline = $1 AND ${FINISHED} AND w.created_at >= $2
      GROUP BY 1, 2 ORDER BY 2, 1`,
    [filter.pipeline, filter.since],
  );
  return rows;
}

/** The eval runs of a pipeline, newest first, with how many of their replays finished. */
export async function listEvalRuns(
  db: Queryable,
  pipeline: string,
): Promise<{ id: string; pipelineVersion: string; cases: number; finished: number; createdAt: Date }[]> {
  const { rows } = await db.query(
    `SELECT r.id, r.pipeline_version AS "pipelineVersion", r.created_at AS "createdAt",
            (SELECT count(*)::int FROM svc.eval_run_cases c WHERE c.eval_run_id = r.id) AS cases,
            (SELECT count(*)::int FROM svc.triggers t WHERE t.eval_run_id = r.id
                AND t.status IN ('completed', 'error', 'discarded')) AS finished
       FROM svc.eval_runs r WHERE r.pipeline = $1 ORDER BY r.created_at DESC LIMIT 50`,
    [pipeline],
  );
  return rows;
}
