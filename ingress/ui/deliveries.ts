import type { Queryable } from "../../db/queryable.ts";
import { html, type SafeHtml } from "./html.ts";

/**
 * ── OUTPUT DELIVERIES: the marked place for issue 12 ──────────────────────────────────────────
 * The trace page shows an invocation's output deliveries (handler, status, link) once
 * `svc.output_deliveries` exists. Until its module lands this reads nothing; fill
 * `readDeliveries` from db/output-deliveries.ts and keep `renderDeliveries` as it is.
 */
export interface DeliveryRow {
  invocationId: string;
  handler: string;
  status: string;
  /** where the result was published (pull request review, chat message), when known */
  url: string | null;
}

export async function readDeliveries(_db: Queryable, _invocationIds: string[]): Promise<DeliveryRow[]> {
  return [];
}

export function renderDeliveries(rows: DeliveryRow[]): SafeHtml {
  if (!rows.length) return html`<p class="placeholder">no output deliveries recorded</p>`;
  return html`<table><thead><tr><th>Handler</th><th>Status</th><th>Link</th></tr></thead><tbody>${rows.map(
    (row) =>
      html`<tr><td>${row.handler}</td><td>${row.status}</td><td>${
        row.url && /^https?:\/\//.test(row.url)
          ? html`<a href="${row.url}" rel="noreferrer">${row.url}</a>`
          : "—"
      }</td></tr>`,
  )}</tbody></table>`;
}
