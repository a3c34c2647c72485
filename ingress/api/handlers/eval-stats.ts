import {
  listEvalRuns,
  pipelineHasRecords,
  readCohort,
  statsByVersionTarget,
  type VersionTargetStats,
} from "../../../db/eval-stats.ts";
import { compareCohorts, outcomeOf, parseCohort, rate } from "../../evals/compare.ts";
import { shadowComparisonOf } from "../../evals/shadow-compare.ts";
import { ok } from "../context.ts";
import { badRequest, notFound } from "../errors.ts";
import { querySince, queryString } from "../input.ts";
import type { Reply, RouteContext } from "../types.ts";

/**
 * Eval statistics (`evals:write`): what each pipeline version did on each target, how often runs
 * agreed with curated expectations, and the comparison of two cohorts.
 */

/** `pipeline`, which may be left out when the daemon runs exactly one pipeline. */
async function pipelineParam(ctx: RouteContext): Promise<string> {
  const configured = Object.keys(ctx.deps.config.pipelines).sort();
  const name = queryString(ctx.req, "pipeline") ?? (configured.length === 1 ? configured[0] : undefined);
  if (!name)
    throw badRequest(
      `query parameter "pipeline" is required: the daemon runs ${configured.length} pipelines (${configured.join(", ") || "none"})`,
    );
  // a pipeline removed from the configuration still has its recorded runs to compare
  if (ctx.deps.config.pipelines[name] || (await pipelineHasRecords(ctx.deps.pool, name))) return name;
  throw notFound("pipeline");
}

/**
 * `GET /evals/stats?pipeline=…&since=…`: per version × target the runs, completed and
 * output_failed rates (95% Wilson intervals), diagnostic codes, p50/p90 durations and token usage
 * (null where no run's runtime reported any). `agreement` is over the curated cases' original runs, and
 * each eval run's replays against the same cases' expectations.
 */
export async function evalStatsRoute(ctx: RouteContext): Promise<Reply> {
  const pipeline = await pipelineParam(ctx);
  const since = querySince(ctx.req);
  const rows = await statsByVersionTarget(ctx.deps.pool, { pipeline, ...(since ? { since } : {}) });
  const cases = await readCohort(ctx.deps.pool, pipeline, { kind: "cases" });
  const runs = await listEvalRuns(ctx.deps.pool, pipeline);
  const evalRuns = [];
  for (const run of runs) {
    const replays = await readCohort(ctx.deps.pool, pipeline, { kind: "run", run: run.id });
    evalRuns.push({ ...run, agreement: agreement(replays) });
  }
  return ok({
    pipeline,
    since: since ?? null,
    versions: rows.map((row) => ({
      version: row.version,
      target: row.target,
      runs: row.runs,
      completed: rate(row.completed, row.runs),
      outputFailed: rate(row.outputFailed, row.runs),
      codes: row.codes,
      p50Ms: row.p50Ms,
      p90Ms: row.p90Ms,
      tokens: tokens(row),
    })),
    agreement: agreement(cases),
    evalRuns,
  });
}

/**
 * Token sums over the runs whose runtime reported usage, and the mean per such run; runs of a
 * runtime that reports none (`command`) are left out of both rather than counted as zero.
 */
function tokens(row: VersionTargetStats) {
  if (row.usageRuns === 0) return null;
  return {
    runs: row.usageRuns,
    input: row.inputTokens,
    output: row.outputTokens,
    meanInput: row.inputTokens / row.usageRuns,
    meanOutput: row.outputTokens / row.usageRuns,
    cacheRead: row.cacheReadTokens,
    requests: row.requests,
    costUsd: row.costUsd,
  };
}

function agreement(runs: Awaited<ReturnType<typeof readCohort>>) {
  const curated = runs.filter((run) => run.expected !== null);
  return rate(curated.filter((run) => outcomeOf(run) === run.expected).length, curated.length);
}

/**
 * `GET /evals/compare?pipeline=…&a=…&b=…`: cohort b against cohort a (see ingress/evals/compare.ts
 * for the cohort forms, the tests and when the answer is "too small to conclude"); with
 * `shadow=<pipeline>` instead, its live version against its shadow candidate (shadow-compare.ts).
 */
export async function compareEvalsRoute(ctx: RouteContext): Promise<Reply> {
  const shadow = queryString(ctx.req, "shadow");
  if (shadow !== undefined) return compareShadowRoute(ctx, shadow);
  const pipeline = await pipelineParam(ctx);
  const cohorts = (["a", "b"] as const).map((name) => {
    const text = queryString(ctx.req, name);
    if (!text) throw badRequest(`query parameter "${name}" (a cohort such as version:1.2.0) is required`);
    const cohort = parseCohort(name, text);
    if ("error" in cohort) throw badRequest(cohort.error);
    return { text, cohort };
  });
  const [a, b] = await Promise.all(cohorts.map(({ cohort }) => readCohort(ctx.deps.pool, pipeline, cohort)));
  return ok({
    pipeline,
    ...compareCohorts({ a: cohorts[0]!.text, b: cohorts[1]!.text }, a!, b!),
  });
}

async function compareShadowRoute(ctx: RouteContext, name: string): Promise<Reply> {
  const cohorts = ["a", "b"].filter((param) => queryString(ctx.req, param) !== undefined);
  if (cohorts.length)
    throw badRequest(
      `"shadow" compares a pipeline's live version with its shadow candidate and cannot be combined with ${cohorts.map((c) => `"${c}"`).join(" and ")}: leave out "shadow" to compare two cohorts, or "a" and "b"`,
    );
  const named = queryString(ctx.req, "pipeline");
  if (named !== undefined && named !== name)
    throw badRequest(
      `"shadow" names the pipeline (${name}); "pipeline" names another (${named}): leave one out`,
    );
  if (!name) throw badRequest(`query parameter "shadow" must name a pipeline with a shadow version`);
  const configured = ctx.deps.config.pipelines[name];
  if (!configured && !(await pipelineHasRecords(ctx.deps.pool, name))) throw notFound("pipeline");
  const comparison = await shadowComparisonOf(ctx.deps.pool, name, {
    live: configured?.version ?? null,
    candidate: configured?.shadow?.candidate?.version ?? null,
  });
  if (comparison.live.runs === 0 && !configured?.shadow)
    throw badRequest(
      `pipeline ${name} has no shadow version and no shadow runs: give it \`shadow: { version_file: … }\` (or run \`svc pipeline shadow ${name} <file>\`) and compare once it has run`,
    );
  return ok(comparison);
}
