import type { Queryable } from "../../db/queryable.ts";
import {
  type PairFinding,
  readShadowPairs,
  type ShadowPair,
  type Spend,
  shadowingSpend,
} from "../../db/review-findings.ts";
import { compareProportions, mannWhitney, quantile } from "../../shared/statistics.ts";
import { ALPHA, MIN_COHORT_RUNS, type Rate, rate } from "./compare.ts";

/**
 * A pipeline's live version against its shadow candidate (issue 57), judged by what people did:
 * over the pairs (the live and the shadow run of one event), the share of each version's findings
 * resolved with a change to their lines, dismissed and thumbed down (the live findings by their own
 * fate, the candidate's by the fate of the live finding on the same lines), findings, tokens, cost
 * and duration per run, with the statistics of cohort comparison (compare.ts, shared/statistics.ts),
 * and what shadowing cost beside the live runs. Shared by `GET /evals/compare?shadow=` and /ui/evals.
 */
export const SIGNALS = ["resolved_with_change", "dismissed", "thumbed_down"] as const;
export const PER_RUN = ["findings", "tokens", "cost_usd", "duration_ms"] as const;

export interface SignalComparison {
  name: (typeof SIGNALS)[number];
  live: Rate;
  candidate: Rate;
  test: "fisher_exact" | "chi_square" | null;
  p: number | null;
  significant: boolean | null;
}

export interface Distribution {
  n: number;
  mean: number | null;
  p50: number | null;
}

export interface PerRunComparison {
  name: (typeof PER_RUN)[number];
  live: Distribution;
  candidate: Distribution;
  test: "mann_whitney";
  method: "exact" | "normal" | null;
  u: number | null;
  p: number | null;
  significant: boolean | null;
}

export interface ShadowComparison {
  pipeline: string;
  live: { version: string | null; runs: number; findings: number };
  /** `sameLines`: the candidate's findings on the lines of a live finding of the same event */
  candidate: { version: string | null; runs: number; findings: number; sameLines: Rate };
  signals: SignalComparison[];
  perRun: PerRunComparison[];
  /** the candidate's runs against the live version's over the same window; shares null without a live spend */
  shadowing: {
    live: Spend;
    shadow: Spend;
    costShare: number | null;
    tokenShare: number | null;
  };
  tooSmall: boolean;
  verdict: string;
}

/** Findings by the run that raised them. */
function byRun(findings: readonly PairFinding[]): Map<string, PairFinding[]> {
  const runs = new Map<string, PairFinding[]>();
  for (const finding of findings)
    runs.set(finding.invocation, [...(runs.get(finding.invocation) ?? []), finding]);
  return runs;
}

/** The overlap of two line ranges, in lines (0 when they do not meet). */
function overlap(a: { startLine: number; endLine: number }, b: { startLine: number; endLine: number }) {
  return Math.max(0, Math.min(a.endLine, b.endLine) - Math.max(a.startLine, b.startLine) + 1);
}

/** Each candidate finding's fate: the live finding of its pair on the most of its lines, or none. */
export function matchedFates(pairs: readonly ShadowPair[], findings: readonly PairFinding[]) {
  const runs = byRun(findings);
  return pairs.flatMap((pair) => {
    const live = runs.get(pair.live.invocation) ?? [];
    return (runs.get(pair.shadow.invocation) ?? []).map((finding) => {
      let best: PairFinding | undefined;
      let most = 0;
      for (const other of live) {
        const lines = other.path === finding.path ? overlap(finding, other) : 0;
        if (lines > most) [best, most] = [other, lines];
      }
      return best?.fate ?? null;
    });
  });
}

function distribution(values: number[]): Distribution {
  const mean = values.length ? values.reduce((sum, value) => sum + value, 0) / values.length : null;
  return { n: values.length, mean, p50: quantile(values, 0.5) };
}

const MEASURES = {
  findings: "findings per run",
  tokens: "tokens per run",
  cost_usd: "cost per run (USD)",
  duration_ms: "duration per run (ms)",
};

const percent = (value: number | null) => (value === null ? "-" : `${(value * 100).toFixed(1)}%`);
const round = (value: number | null) => (value === null ? "-" : String(Math.round(value * 100) / 100));

function verdictOf(c: Omit<ShadowComparison, "verdict">): string {
  const live = c.live.version ?? "the live version";
  const candidate = c.candidate.version ?? "the candidate";
  if (c.tooSmall)
    return `not enough data yet: ${c.live.runs} paired runs of ${live} and ${candidate}; each version needs at least ${MIN_COHORT_RUNS} (the numbers are shown, no conclusion is drawn)`;
  const found = [
    ...c.signals
      .filter((s) => s.significant)
      .map(
        (s) =>
          `${s.name} ${percent(s.live.rate)} (${live}) vs ${percent(s.candidate.rate)} (${candidate}), p = ${s.p!.toPrecision(3)} (${s.test})`,
      ),
    ...c.perRun
      .filter((m) => m.significant)
      .map(
        (m) =>
          `${MEASURES[m.name]}: p50 ${round(m.live.p50)} (${live}) vs ${round(m.candidate.p50)} (${candidate}), p = ${m.p!.toPrecision(3)} (Mann-Whitney U)`,
      ),
  ];
  return found.length
    ? `significant at the ${ALPHA * 100}% level: ${found.join("; ")}`
    : `no significant difference at the ${ALPHA * 100}% level`;
}

/** The comparison over `pairs` (one live version and one candidate version), pure. */
export function compareShadow(
  pipeline: string,
  versions: { live: string | null; candidate: string | null },
  pairs: readonly ShadowPair[],
  findings: readonly PairFinding[],
  spend: { live: Spend; shadow: Spend },
): ShadowComparison {
  const tooSmall = pairs.length < MIN_COHORT_RUNS;
  const liveIds = new Set(pairs.map((pair) => pair.live.invocation));
  const liveFates = findings.filter((f) => liveIds.has(f.invocation)).map((f) => f.fate);
  const candidateFates = matchedFates(pairs, findings);
  const signals = SIGNALS.map((name): SignalComparison => {
    const live = rate(liveFates.filter((fate) => fate === name).length, liveFates.length);
    const candidate = rate(candidateFates.filter((fate) => fate === name).length, candidateFates.length);
    const test = compareProportions(live.count, live.n, candidate.count, candidate.n);
    return {
      name,
      live,
      candidate,
      test: test?.test ?? null,
      p: test?.p ?? null,
      significant: test && !tooSmall ? test.p < ALPHA : null,
    };
  });
  const counts = byRun(findings);
  const measure = (side: "live" | "shadow", name: (typeof PER_RUN)[number]): number[] =>
    pairs.flatMap((pair) => {
      const run = pair[side];
      const value =
        name === "findings"
          ? (counts.get(run.invocation)?.length ?? 0)
          : name === "tokens"
            ? run.tokens
            : name === "cost_usd"
              ? run.costUsd
              : run.durationMs;
      return value === null ? [] : [value];
    });
  const perRun = PER_RUN.map((name): PerRunComparison => {
    const live = measure("live", name);
    const candidate = measure("shadow", name);
    const test = mannWhitney(live, candidate);
    return {
      name,
      live: distribution(live),
      candidate: distribution(candidate),
      test: "mann_whitney",
      method: test?.method ?? null,
      u: test?.u ?? null,
      p: test?.p ?? null,
      significant: test && !tooSmall ? test.p < ALPHA : null,
    };
  });
  const share = (part: number | null, whole: number | null) =>
    part === null || whole === null || whole === 0 ? null : part / whole;
  const partial: Omit<ShadowComparison, "verdict"> = {
    pipeline,
    live: { version: versions.live, runs: pairs.length, findings: liveFates.length },
    candidate: {
      version: versions.candidate,
      runs: pairs.length,
      findings: candidateFates.length,
      sameLines: rate(candidateFates.filter((fate) => fate !== null).length, candidateFates.length),
    },
    signals,
    perRun,
    shadowing: {
      ...spend,
      costShare: share(spend.shadow.costUsd, spend.live.costUsd),
      tokenShare: share(spend.shadow.tokens, spend.live.tokens),
    },
    tooSmall,
  };
  return { ...partial, verdict: verdictOf(partial) };
}

/**
 * The comparison of the pipeline's newest version pair: the live version and candidate of its
 * latest shadow run (`fallback`, the configured versions, names them before any pair exists).
 */
export async function shadowComparisonOf(
  db: Queryable,
  pipeline: string,
  fallback: { live: string | null; candidate: string | null },
): Promise<ShadowComparison> {
  const { pairs, findings } = await readShadowPairs(db, pipeline);
  const newest = pairs[0];
  const versions = newest ? { live: newest.live.version, candidate: newest.shadow.version } : fallback;
  const chosen = pairs.filter(
    (pair) => pair.live.version === versions.live && pair.shadow.version === versions.candidate,
  );
  const spend = await shadowingSpend(db, {
    pipeline,
    liveVersion: versions.live,
    candidateVersion: versions.candidate,
  });
  return compareShadow(pipeline, versions, chosen, findings, spend);
}
