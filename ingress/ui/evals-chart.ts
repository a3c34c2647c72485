import type { DailyRate } from "../../db/eval-stats.ts";
import { html, type SafeHtml } from "./html.ts";

/**
 * The completed rate per pipeline version over time as an inline SVG drawn on the server: one
 * polyline per version across the days that had runs, a 0–100% axis, a legend. Colours are SVG
 * presentation attributes (not style), so the CSP's `style-src 'self'` holds; every label is escaped.
 */
const WIDTH = 720;
const HEIGHT = 240;
const LEFT = 44;
const RIGHT = 150;
const TOP = 12;
const BOTTOM = 28;
const COLOURS = ["#1c6dd0", "#c62828", "#2e7d32", "#ef6c00", "#6a1b9a", "#00838f"];

export function completedRateChart(days: DailyRate[]): SafeHtml {
  const dayList = [...new Set(days.map((row) => row.day))].sort();
  if (dayList.length === 0) return html`<p class="muted">no finished runs in the chart's window</p>`;
  const versions = [...new Set(days.map((row) => row.version ?? "(unrecorded)"))];
  const plotWidth = WIDTH - LEFT - RIGHT;
  const plotHeight = HEIGHT - TOP - BOTTOM;
  const x = (day: string) =>
    LEFT + (dayList.length === 1 ? plotWidth / 2 : (dayList.indexOf(day) / (dayList.length - 1)) * plotWidth);
  const y = (rate: number) => TOP + (1 - rate) * plotHeight;
  const grid = [0, 0.25, 0.5, 0.75, 1].map(
    (rate) =>
      html`<line x1="${LEFT}" x2="${LEFT + plotWidth}" y1="${y(rate)}" y2="${y(rate)}" stroke="#d9dee7"/><text x="${LEFT - 6}" y="${y(rate) + 4}" text-anchor="end" font-size="11" fill="#5d6675">${rate * 100}%</text>`,
  );
  const labels = [dayList[0]!, ...(dayList.length > 1 ? [dayList[dayList.length - 1]!] : [])].map(
    (day) =>
      html`<text x="${x(day)}" y="${HEIGHT - 8}" text-anchor="middle" font-size="11" fill="#5d6675">${day}</text>`,
  );
  const series = versions.map((version, index) => {
    const colour = COLOURS[index % COLOURS.length]!;
    const points = days
      .filter((row) => (row.version ?? "(unrecorded)") === version)
      .map((row) => ({ x: x(row.day), y: y(row.completed / row.runs), row }));
    const line = points.map((point) => `${point.x.toFixed(1)},${point.y.toFixed(1)}`).join(" ");
    return html`<g><polyline points="${line}" fill="none" stroke="${colour}" stroke-width="2"/>${points.map(
      (point) =>
        html`<circle cx="${point.x.toFixed(1)}" cy="${point.y.toFixed(1)}" r="3" fill="${colour}"><title>${version} ${point.row.day}: ${point.row.completed}/${point.row.runs} completed</title></circle>`,
    )}<rect x="${WIDTH - RIGHT + 12}" y="${TOP + index * 18}" width="10" height="10" fill="${colour}"/><text x="${WIDTH - RIGHT + 28}" y="${TOP + index * 18 + 9}" font-size="12" fill="#1d2330">${version}</text></g>`;
  });
  return html`<svg class="chart" role="img" aria-label="completed rate per version per day" viewBox="0 0 ${WIDTH} ${HEIGHT}" width="${WIDTH}" height="${HEIGHT}" xmlns="http://www.w3.org/2000/svg">${grid}${labels}${series}</svg>`;
}
