import { pValue, type RateView, rateWithInterval } from "./eval-views.ts";
import { table } from "./table.ts";

/** What `GET /evals/compare?shadow=<pipeline>` answers: the live version against its shadow candidate. */
export interface ShadowComparisonView {
  pipeline: string;
  live: { version: string | null; runs: number; findings: number };
  candidate: { version: string | null; runs: number; findings: number; sameLines: RateView };
  signals: {
    name: "resolved_with_change" | "dismissed" | "thumbed_down";
    live: RateView;
    candidate: RateView;
    test: string | null;
    p: number | null;
    significant: boolean | null;
  }[];
  perRun: {
    name: "findings" | "tokens" | "cost_usd" | "duration_ms";
    live: { n: number; mean: number | null; p50: number | null };
    candidate: { n: number; mean: number | null; p50: number | null };
    method: string | null;
    p: number | null;
    significant: boolean | null;
  }[];
  shadowing: {
    live: { runs: number; tokens: number; costUsd: number | null };
    shadow: { runs: number; tokens: number; costUsd: number | null };
    costShare: number | null;
    tokenShare: number | null;
  };
  tooSmall: boolean;
  verdict: string;
}

const SIGNAL_NAMES = {
  resolved_with_change: "resolved with a change",
  dismissed: "dismissed",
  thumbed_down: "thumbed down",
};

const usd = (value: number | null) => (value === null ? "unpriced" : `$${value.toFixed(4)}`);

function perRunCell(
  name: ShadowComparisonView["perRun"][number]["name"],
  d: { n: number; mean: number | null; p50: number | null },
) {
  if (d.n === 0 || d.p50 === null) return "-";
  if (name === "findings") return `${d.mean!.toFixed(2)} (p50 ${d.p50})`;
  if (name === "duration_ms") return `${Math.round(d.p50)}ms`;
  if (name === "cost_usd") return usd(d.p50);
  return Math.round(d.p50).toLocaleString("en-US");
}

const PER_RUN_NAMES = {
  findings: "findings per run",
  tokens: "p50 tokens per run",
  cost_usd: "p50 cost per run",
  duration_ms: "p50 duration",
};

/** The two versions side by side, what shadowing cost, and the verdict, as text. */
export function shadowReport(view: ShadowComparisonView): string {
  const live = `LIVE: ${view.live.version ?? "(unrecorded)"} (${view.live.runs} runs, ${view.live.findings} findings)`;
  const candidate = `CANDIDATE: ${view.candidate.version ?? "(unrecorded)"} (${view.candidate.runs} runs, ${view.candidate.findings} findings)`;
  const rows = [
    ...view.perRun
      .filter((m) => m.name === "findings")
      .map((m) => [
        PER_RUN_NAMES[m.name],
        perRunCell(m.name, m.live),
        perRunCell(m.name, m.candidate),
        m.method ? `mann_whitney (${m.method})` : null,
        pValue(m.p),
      ]),
    ...view.signals.map((s) => [
      SIGNAL_NAMES[s.name],
      rateWithInterval(s.live),
      rateWithInterval(s.candidate),
      s.test,
      pValue(s.p),
    ]),
    ["on a live finding's lines", "-", rateWithInterval(view.candidate.sameLines), null, null],
    ...view.perRun
      .filter((m) => m.name !== "findings")
      .map((m) => [
        PER_RUN_NAMES[m.name],
        perRunCell(m.name, m.live),
        perRunCell(m.name, m.candidate),
        m.method ? `mann_whitney (${m.method})` : null,
        pValue(m.p),
      ]),
  ];
  const s = view.shadowing;
  const share =
    s.costShare !== null
      ? `${(s.costShare * 100).toFixed(1)}% of the live runs' cost`
      : s.tokenShare !== null
        ? `${(s.tokenShare * 100).toFixed(1)}% of the live runs' tokens (no priced target)`
        : "no share: the live runs reported no usage";
  const cost = `shadowing cost ${usd(s.shadow.costUsd)} over ${s.shadow.runs} runs beside ${usd(s.live.costUsd)} over ${s.live.runs} live runs: ${share}`;
  return `${table(["MEASURE", live, candidate, "TEST", "P"], rows)}\n\n${cost}\n${view.verdict}`;
}
