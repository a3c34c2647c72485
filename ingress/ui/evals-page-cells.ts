import type { Rate } from "../evals/compare.ts";
import { html, type SafeHtml } from "./html.ts";

/** The cells /ui/evals' comparison tables share: a rate with its interval, a p-value, a verdict, a duration. */
export function rateCell(rate: Rate): SafeHtml | string {
  if (rate.rate === null || !rate.interval) return "—";
  const pct = (value: number) => (value * 100).toFixed(1);
  return html`${pct(rate.rate)}% <span class="muted">[${pct(rate.interval.low)}–${pct(rate.interval.high)}] ${rate.count}/${rate.n}</span>`;
}

export const pValue = (p: number | null) =>
  p === null ? "—" : p < 0.0001 ? p.toExponential(2) : p.toFixed(4);
export const verdict = (significant: boolean | null) =>
  significant === null ? "—" : significant ? "yes" : "no";
export const ms = (value: number | null) => (value === null ? "—" : `${Math.round(value)} ms`);
