import type { Distribution, PerRunComparison, ShadowComparison } from "../evals/shadow-compare.ts";
import { ms, pValue, rateCell, verdict } from "./evals-page-cells.ts";
import { html, type SafeHtml } from "./html.ts";

/**
 * /ui/evals' shadow section: the live version and its shadow candidate side by side, judged by what
 * people did with their findings (GET /evals/compare?shadow=… answers the same numbers).
 */
const SIGNAL_NAMES = {
  resolved_with_change: "resolved with a change",
  dismissed: "dismissed",
  thumbed_down: "thumbed down",
};
const PER_RUN_NAMES = {
  findings: "findings per run",
  tokens: "p50 tokens per run",
  cost_usd: "p50 cost per run",
  duration_ms: "p50 duration",
};

const usd = (value: number | null) => (value === null ? "unpriced" : `$${value.toFixed(4)}`);

function perRunCell(name: PerRunComparison["name"], d: Distribution): string {
  if (d.n === 0 || d.p50 === null) return "—";
  if (name === "findings") return `${d.mean!.toFixed(2)} (p50 ${d.p50})`;
  if (name === "duration_ms") return ms(d.p50);
  if (name === "cost_usd") return usd(d.p50);
  return Math.round(d.p50).toLocaleString("en-US");
}

function perRunRow(m: PerRunComparison): SafeHtml {
  return html`<tr><td>${PER_RUN_NAMES[m.name]}</td><td>${perRunCell(m.name, m.live)}</td><td>${perRunCell(m.name, m.candidate)}</td><td>${m.method ? `mann_whitney (${m.method})` : "—"}</td><td>${pValue(m.p)}</td><td>${verdict(m.significant)}</td></tr>`;
}

function shadowingLine(c: ShadowComparison): string {
  const s = c.shadowing;
  const share =
    s.costShare !== null
      ? `${(s.costShare * 100).toFixed(1)}% of the live runs' cost`
      : s.tokenShare !== null
        ? `${(s.tokenShare * 100).toFixed(1)}% of the live runs' tokens (no priced target)`
        : "no share yet: the live runs reported no usage";
  return `Shadowing cost ${usd(s.shadow.costUsd)} over ${s.shadow.runs} runs beside ${usd(s.live.costUsd)} over ${s.live.runs} live runs: ${share}.`;
}

export function shadowSection(c: ShadowComparison): SafeHtml {
  const findings = c.perRun.find((m) => m.name === "findings")!;
  return html`<h2 id="shadow">Shadow version</h2>
<p class="muted">Live <code>${c.live.version ?? "(unrecorded)"}</code> against its candidate <code>${c.candidate.version ?? "(unrecorded)"}</code> on the events both ran on. A live finding's fate is what people did with it; a candidate's finding takes the fate of the live finding on the same lines.</p>
<table class="comparison shadow"><thead><tr><th>Measure</th><th>Live: <code>${c.live.version ?? "—"}</code> (${c.live.runs} runs, ${c.live.findings} findings)</th><th>Candidate: <code>${c.candidate.version ?? "—"}</code> (${c.candidate.runs} runs, ${c.candidate.findings} findings)</th><th>Test</th><th>p</th><th>Significant</th></tr></thead>
<tbody>${perRunRow(findings)}${c.signals.map(
    (s) =>
      html`<tr><td>${SIGNAL_NAMES[s.name]}</td><td>${rateCell(s.live)}</td><td>${rateCell(s.candidate)}</td><td>${s.test ?? "—"}</td><td>${pValue(s.p)}</td><td>${verdict(s.significant)}</td></tr>`,
  )}<tr><td>on a live finding's lines</td><td>—</td><td>${rateCell(c.candidate.sameLines)}</td><td>—</td><td>—</td><td>—</td></tr>${c.perRun
    .filter((m) => m.name !== "findings")
    .map(perRunRow)}</tbody></table>
<p class="shadowing">${shadowingLine(c)}</p>
<p class="${c.tooSmall ? "error shadow" : "verdict shadow"}" role="status">${c.verdict}</p>`;
}
