import type { EvalCase } from "../../db/eval-cases.ts";
import type { DailyRate } from "../../db/eval-stats.ts";
import type { Comparison } from "../evals/compare.ts";
import type { ShadowComparison } from "../evals/shadow-compare.ts";
import { completedRateChart } from "./evals-chart.ts";
import { ms, pValue, rateCell, verdict } from "./evals-page-cells.ts";
import { shadowSection } from "./evals-shadow.ts";
import { html, type SafeHtml } from "./html.ts";
import { page } from "./layout.ts";

export interface EvalsView {
  pipelines: string[];
  pipeline?: string;
  a: string;
  b: string;
  comparison?: Comparison;
  /** the live version against its shadow candidate, for a pipeline with a shadow version or shadow runs */
  shadow?: ShadowComparison;
  days: DailyRate[];
  cases: EvalCase[];
  error?: string;
}

function comparisonTable(comparison: Comparison): SafeHtml {
  const d = comparison.duration;
  return html`<table class="comparison"><thead><tr><th>Measure</th><th>A: <code>${comparison.a.cohort}</code> (${comparison.a.runs})</th><th>B: <code>${comparison.b.cohort}</code> (${comparison.b.runs})</th><th>Test</th><th>p</th><th>Significant</th></tr></thead>
<tbody>${comparison.rates.map(
    (rate) =>
      html`<tr><td>${rate.name} rate</td><td>${rateCell(rate.a)}</td><td>${rateCell(rate.b)}</td><td>${rate.test ?? "—"}</td><td>${pValue(rate.p)}</td><td>${verdict(rate.significant)}</td></tr>`,
  )}<tr><td>p50 duration</td><td>${ms(d.a.p50Ms)}</td><td>${ms(d.b.p50Ms)}</td><td>${d.method ? `mann_whitney (${d.method})` : "—"}</td><td>${pValue(d.p)}</td><td>${verdict(d.significant)}</td></tr></tbody></table>
<p class="${comparison.tooSmall ? "error" : "verdict"}" role="status">${comparison.verdict}</p>`;
}

/** The comparison of two cohorts as a table, the shadow version beside the live one, the completed rate per version over time, and the curated cases. */
export function evalsPage(view: EvalsView): string {
  const body = html`<h1>Evals</h1>
<form class="filters" method="get" action="/ui/evals">
<label>Pipeline <select name="pipeline">${view.pipelines.map(
    (name) => html`<option value="${name}"${view.pipeline === name ? html` selected` : ""}>${name}</option>`,
  )}</select></label>
<label>Cohort A <input name="a" value="${view.a}" placeholder="version:1.2.0"></label>
<label>Cohort B <input name="b" value="${view.b}" placeholder="version:1.3.0"></label>
<button type="submit">Compare</button>
</form>
<p class="muted">A cohort is <code>version:&lt;v&gt;</code>, <code>target:&lt;name&gt;</code>, <code>dates:&lt;from&gt;..&lt;to&gt;</code>, <code>run:evr_…</code>, <code>original:evr_…</code> or <code>cases[:&lt;tag&gt;]</code>.</p>
${view.error ? html`<p class="error" role="alert">${view.error}</p>` : ""}
${view.comparison ? comparisonTable(view.comparison) : ""}
${view.shadow ? shadowSection(view.shadow) : ""}
<h2>Completed rate per version, last 30 days</h2>
${completedRateChart(view.days)}
<h2>Curated cases</h2>
<table><thead><tr><th>Case</th><th>Version</th><th>Ran</th><th>Expected</th><th>Tags</th><th>Notes</th></tr></thead>
<tbody>${view.cases.map(
    (c) =>
      html`<tr><td><code>${c.id}</code></td><td>${c.pipelineVersion ?? "—"}</td><td>${c.observed}${c.observedCode ? html` <code>${c.observedCode}</code>` : ""}</td><td>${c.expected}</td><td>${c.tags.join(", ")}</td><td class="notes">${c.notes}</td></tr>`,
  )}</tbody></table>
${view.cases.length ? "" : html`<p class="muted">no curated cases for this pipeline</p>`}`;
  return page("Evals", body, { signedIn: true });
}
