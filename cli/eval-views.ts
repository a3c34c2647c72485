/** The shapes the eval commands read from the daemon API (GET/POST /evals…). */
export interface RateView {
  count: number;
  n: number;
  rate: number | null;
  interval: { low: number; high: number } | null;
}

export interface EvalCaseView {
  id: string;
  invocationId: string | null;
  pipeline: string;
  pipelineVersion: string | null;
  target: string | null;
  event: { kind: string; source: string; name: string };
  observed: "pass" | "fail";
  observedCode: string | null;
  expected: "pass" | "fail";
  expectedResult: Record<string, unknown> | null;
  notes: string;
  tags: string[];
  createdAt: string;
}

export interface ComparisonView {
  pipeline: string;
  a: { cohort: string; runs: number };
  b: { cohort: string; runs: number };
  rates: {
    name: string;
    a: RateView;
    b: RateView;
    test: string | null;
    p: number | null;
    significant: boolean | null;
  }[];
  duration: {
    a: { n: number; p50Ms: number | null };
    b: { n: number; p50Ms: number | null };
    method: string | null;
    p: number | null;
    significant: boolean | null;
  };
  tooSmall: boolean;
  verdict: string;
}

/** `90.0% [76.9–96.0]`: a rate with its 95% interval. */
export function rateWithInterval(rate: RateView): string {
  if (rate.rate === null || !rate.interval) return "-";
  const pct = (value: number) => (value * 100).toFixed(1);
  return `${pct(rate.rate)}% [${pct(rate.interval.low)}–${pct(rate.interval.high)}] (${rate.count}/${rate.n})`;
}

export function pValue(p: number | null): string {
  return p === null ? "-" : p < 0.0001 ? p.toExponential(2) : p.toFixed(4);
}

/** An eval case as a few readable lines. */
export function describeCase(c: EvalCaseView): string {
  return [
    `${c.id}  ${c.pipeline} ${c.pipelineVersion ?? "(unversioned)"} on ${c.target ?? "-"}`,
    `run:       ${c.invocationId ?? "(gone)"}, ${c.event.kind} ${c.event.name} from ${c.event.source}`,
    `ran:       ${c.observed}${c.observedCode ? ` (${c.observedCode})` : ""}`,
    `expected:  ${c.expected}${c.expectedResult ? ` with ${JSON.stringify(c.expectedResult)}` : ""}`,
    `tags:      ${c.tags.join(", ") || "-"}`,
    `notes:     ${c.notes || "-"}`,
  ].join("\n");
}
