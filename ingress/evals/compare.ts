import { isDeepStrictEqual } from "node:util";
import type { Cohort, CohortRun } from "../../db/eval-stats.ts";
import {
  compareProportions,
  type Interval,
  mannWhitney,
  quantile,
  wilsonInterval,
} from "../../shared/statistics.ts";

/**
 * Cohort comparison of eval runs: each rate of two cohorts with its 95% Wilson interval and a
 * two-sided test, the p50 durations with a Mann–Whitney U p-value, and a plain verdict, which says
 * "too small to conclude" below MIN_COHORT_RUNS runs in either cohort. Shared by `GET /evals/compare`
 * and the /ui/evals page.
 */
export const MIN_COHORT_RUNS = 10;
export const ALPHA = 0.05;

const COHORT_FORMS =
  "version:1.2.0, target:<name>, dates:2026-11-01..2026-11-15, run:evr_…, original:evr_… or cases[:<tag>]";

/**
 * `version:1.2.0`, `target:local-agent`, `dates:<from>..<to>` (to exclusive), `run:evr_…` (an eval
 * run's replays), `original:evr_…` (the original runs of the cases it replayed), `cases[:tag]`.
 */
export function parseCohort(name: string, text: string): Cohort | { error: string } {
  const refuse = { error: `"${name}" must be a cohort such as ${COHORT_FORMS} (got "${text}")` };
  const colon = text.indexOf(":");
  const kind = colon < 0 ? text : text.slice(0, colon);
  const value = colon < 0 ? "" : text.slice(colon + 1);
  if (kind === "cases") return value ? { kind: "cases", tag: value } : { kind: "cases" };
  if (!value) return refuse;
  if (kind === "version") return { kind: "version", version: value };
  if (kind === "target") return { kind: "target", target: value };
  if (kind === "run" || kind === "original") return value.startsWith("evr_") ? { kind, run: value } : refuse;
  if (kind === "dates") {
    const [from, to, extra] = value.split("..");
    const valid = (date: string | undefined) =>
      date !== undefined && /^\d{4}-\d{2}-\d{2}/.test(date) && !Number.isNaN(Date.parse(date));
    if (extra !== undefined || !valid(from) || !valid(to))
      return {
        error: `"${name}": dates must be <from>..<to> as ISO dates, e.g. dates:2026-11-01..2026-11-15`,
      };
    return { kind: "dates", from: new Date(from!), to: new Date(to!) };
  }
  return refuse;
}

/** A case's run passes when it completed and its result holds every expected result field. */
export function outcomeOf(run: Pick<CohortRun, "completed" | "result" | "expectedResult">): "pass" | "fail" {
  if (!run.completed) return "fail";
  const result = (run.result ?? {}) as Record<string, unknown>;
  for (const [key, value] of Object.entries(run.expectedResult ?? {}))
    if (!isDeepStrictEqual(result[key], value)) return "fail";
  return "pass";
}

export interface Rate {
  count: number;
  n: number;
  rate: number | null;
  interval: Interval | null;
}

export function rate(count: number, n: number): Rate {
  return { count, n, rate: n ? count / n : null, interval: wilsonInterval(count, n) };
}

export interface RateComparison {
  name: "completed" | "output_failed" | "agreement";
  a: Rate;
  b: Rate;
  test: "fisher_exact" | "chi_square" | null;
  p: number | null;
  significant: boolean | null;
}

export interface Comparison {
  a: { cohort: string; runs: number };
  b: { cohort: string; runs: number };
  rates: RateComparison[];
  duration: {
    a: { n: number; p50Ms: number | null };
    b: { n: number; p50Ms: number | null };
    test: "mann_whitney";
    method: "exact" | "normal" | null;
    u: number | null;
    p: number | null;
    significant: boolean | null;
  };
  tooSmall: boolean;
  verdict: string;
}

function compareRate(
  name: RateComparison["name"],
  a: CohortRun[],
  b: CohortRun[],
  counts: (run: CohortRun) => boolean,
  tooSmall: boolean,
): RateComparison {
  const ra = rate(a.filter(counts).length, a.length);
  const rb = rate(b.filter(counts).length, b.length);
  const test = compareProportions(ra.count, ra.n, rb.count, rb.n);
  return {
    name,
    a: ra,
    b: rb,
    test: test?.test ?? null,
    p: test?.p ?? null,
    significant: test && !tooSmall ? test.p < ALPHA : null,
  };
}

const percent = (value: number | null) => (value === null ? "-" : `${(value * 100).toFixed(1)}%`);

function verdictOf(comparison: Omit<Comparison, "verdict">): string {
  const { a, b } = comparison;
  if (comparison.tooSmall)
    return `too small to conclude: cohort a has ${a.runs} runs and cohort b has ${b.runs}; each needs at least ${MIN_COHORT_RUNS}`;
  const found = comparison.rates
    .filter((r) => r.significant)
    .map(
      (r) =>
        `${r.name} rate ${percent(r.a.rate)} (a) vs ${percent(r.b.rate)} (b), p = ${r.p!.toPrecision(3)} (${r.test})`,
    );
  const d = comparison.duration;
  if (d.significant)
    found.push(
      `p50 duration ${Math.round(d.a.p50Ms!)} ms (a) vs ${Math.round(d.b.p50Ms!)} ms (b), p = ${d.p!.toPrecision(3)} (Mann-Whitney U)`,
    );
  return found.length
    ? `significant at the ${ALPHA * 100}% level: ${found.join("; ")}`
    : `no significant difference at the ${ALPHA * 100}% level`;
}

/** Compares cohort b against cohort a; `agreement` appears when every run of both stands for a curated case. */
export function compareCohorts(labels: { a: string; b: string }, a: CohortRun[], b: CohortRun[]): Comparison {
  const tooSmall = a.length < MIN_COHORT_RUNS || b.length < MIN_COHORT_RUNS;
  const rates = [
    compareRate("completed", a, b, (run) => run.completed, tooSmall),
    compareRate("output_failed", a, b, (run) => run.code === "output_failed", tooSmall),
  ];
  const curated = (runs: CohortRun[]) => runs.length > 0 && runs.every((run) => run.expected !== null);
  if (curated(a) && curated(b))
    rates.push(compareRate("agreement", a, b, (run) => outcomeOf(run) === run.expected, tooSmall));
  const durations = (runs: CohortRun[]) =>
    runs.map((run) => run.durationMs).filter((ms): ms is number => ms !== null);
  const da = durations(a);
  const db = durations(b);
  const test = mannWhitney(da, db);
  const partial: Omit<Comparison, "verdict"> = {
    a: { cohort: labels.a, runs: a.length },
    b: { cohort: labels.b, runs: b.length },
    rates,
    duration: {
      a: { n: da.length, p50Ms: quantile(da, 0.5) },
      b: { n: db.length, p50Ms: quantile(db, 0.5) },
      test: "mann_whitney",
      method: test?.method ?? null,
      u: test?.u ?? null,
      p: test?.p ?? null,
      significant: test && !tooSmall ? test.p < ALPHA : null,
    },
    tooSmall,
  };
  return { ...partial, verdict: verdictOf(partial) };
}
