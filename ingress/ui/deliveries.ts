import { listDeliveries } from "../../db/output-deliveries.ts";
import type { Queryable } from "../../db/queryable.ts";
import { html, type SafeHtml } from "./html.ts";

/** An invocation's output deliveries as the trace page shows them (handler, key, status, link). */
export interface DeliveryRow {
  invocationId: string;
  key: string;
  handler: string;
  status: string;
  /** where the result was published (pull request review, chat message), when known */
  url: string | null;
}

export async function readDeliveries(db: Queryable, invocationIds: string[]): Promise<DeliveryRow[]> {
  const rows = await listDeliveries(db, invocationIds);
  return rows.map((row) => ({
    invocationId: row.invocation_id,
    key: row.output_key,
    handler: row.handler,
    status: row.status,
    url: row.remote_url,
  }));
}

export function renderDeliveries(rows: DeliveryRow[]): SafeHtml {
  if (!rows.length) return html`<p class="placeholder">no output deliveries recorded</p>`;
  return html`<table><thead><tr><th>Output</th><th>Handler</th><th>Status</th><th>Link</th></tr></thead><tbody>${rows.map(
    (row) =>
      html`<tr><td>${row.key}</td><td>${row.handler}</td><td>${row.status}</td><td>${
        row.url && /^https?:\/\//.test(row.url)
          ? html`<a href="${row.url}" rel="noreferrer">${row.url}</a>`
          : "—"
      }</td></tr>`,
  )}</tbody></table>`;
}
