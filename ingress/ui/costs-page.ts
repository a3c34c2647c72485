import { COST_GROUPS, type CostDay, type CostGroup, type CostRow } from "../../db/costs.ts";
import { costTotal } from "../api/handlers/costs.ts";
import { html, type SafeHtml } from "./html.ts";
import { page } from "./layout.ts";

export interface CostsView {
  by: CostGroup;
  /** the window as typed (`30d`, an ISO time) */
  since: string;
  rows: CostRow[];
  days: CostDay[];
  error?: string;
}

const WIDTH = 720;
const HEIGHT = 220;
const LEFT = 64;
const RIGHT = 16;
const TOP = 12;
const BOTTOM = 28;

const tokens = (row: { inputTokens: number; outputTokens: number }) =>
  (row.inputTokens + row.outputTokens).toLocaleString("en-US");
const usd = (value: number | null) => (value === null ? "unpriced" : `$${value.toFixed(4)}`);

/**
 * One bar per day that had model usage, drawn on the server as SVG (no script; colours are
 * presentation attributes, which the CSP's `style-src 'self'` allows). The bars are USD when any
 * day was priced, else tokens: a daemon whose targets have no `price` still sees its usage.
 */
function perDayChart(days: CostDay[]): SafeHtml {
  if (days.length === 0) return html`<p class="muted">no model usage in this window</p>`;
  const priced = days.some((day) => day.costUsd !== null);
  const value = (day: CostDay) => (priced ? (day.costUsd ?? 0) : day.inputTokens + day.outputTokens);
  const label = (n: number) => (priced ? `$${n.toFixed(2)}` : Math.round(n).toLocaleString("en-US"));
  const top = Math.max(...days.map(value)) || 1;
  const plotWidth = WIDTH - LEFT - RIGHT;
  const plotHeight = HEIGHT - TOP - BOTTOM;
  const slot = plotWidth / days.length;
  const bar = Math.max(2, Math.min(40, slot * 0.7));
  const y = (n: number) => TOP + (1 - n / top) * plotHeight;
  const grid = [0, 0.5, 1].map(
    (share) =>
      html`<line x1="${LEFT}" x2="${LEFT + plotWidth}" y1="${y(share * top)}" y2="${y(share * top)}" stroke="#d9dee7"/><text x="${LEFT - 6}" y="${y(share * top) + 4}" text-anchor="end" font-size="11" fill="#5d6675">${label(share * top)}</text>`,
  );
  const bars = days.map((day, index) => {
    const x = LEFT + index * slot + (slot - bar) / 2;
    const h = (value(day) / top) * plotHeight;
    return html`<rect class="bar" x="${x.toFixed(1)}" y="${(TOP + plotHeight - h).toFixed(1)}" width="${bar.toFixed(1)}" height="${h.toFixed(1)}" fill="#1c6dd0"><title>${day.day}: ${usd(day.costUsd)}, ${tokens(day)} tokens</title></rect>`;
  });
  const ends = [days[0]!, ...(days.length > 1 ? [days[days.length - 1]!] : [])].map(
    (day) =>
      html`<text x="${LEFT + days.indexOf(day) * slot + slot / 2}" y="${HEIGHT - 8}" text-anchor="middle" font-size="11" fill="#5d6675">${day.day}</text>`,
  );
  return html`<svg class="chart" role="img" aria-label="${priced ? "cost in USD" : "tokens"} per day" viewBox="0 0 ${WIDTH} ${HEIGHT}" width="${WIDTH}" height="${HEIGHT}" xmlns="http://www.w3.org/2000/svg">${grid}${bars}${ends}</svg>`;
}

/** What runs cost per repository, pipeline or author (a table with its total) and per day (a chart). */
export function costsPage(view: CostsView): string {
  const total = costTotal(view.rows);
  const body = html`<h1>Costs</h1>
<form class="filters" method="get" action="/ui/costs">
<label>By <select name="by">${COST_GROUPS.map(
    (group) => html`<option value="${group}"${view.by === group ? html` selected` : ""}>${group}</option>`,
  )}</select></label>
<label>Since <input name="since" value="${view.since}" placeholder="30d"></label>
<button type="submit">Show</button>
</form>
<p class="muted">Agent tasks' tokens (input and output) and their cost at each target's <code>price</code>, as the worker's model gateway counted them; a target without a price is "unpriced".</p>
${view.error ? html`<p class="error" role="alert">${view.error}</p>` : ""}
<table class="costs"><thead><tr><th>${view.by}</th><th>Runs</th><th>Tokens</th><th>Cost</th></tr></thead>
<tbody>${view.rows.map(
    (row) =>
      html`<tr><td>${row.key ?? html`<span class="muted">(none)</span>`}</td><td>${row.runs}</td><td>${tokens(row)}</td><td>${usd(row.costUsd)}</td></tr>`,
  )}</tbody>
<tfoot><tr><th>Total</th><th>${total.runs}</th><th>${tokens(total)}</th><th>${usd(total.costUsd)}</th></tr></tfoot></table>
<h2>Per day (UTC)</h2>
${perDayChart(view.days)}`;
  return page("Costs", body, { signedIn: true });
}
