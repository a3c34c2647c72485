import type { TriggerStatus, TriggerSummary } from "../../db/triggers.ts";
import { html } from "./html.ts";
import { diagnosticBlock, page, statusBadge, when } from "./layout.ts";

export const PAGE_STATUSES: readonly TriggerStatus[] = [
  "queued",
  "running",
  "completed",
  "error",
  "discarded",
];

export interface TriggerListView {
  triggers: TriggerSummary[];
  nextCursor: string | null;
  status?: TriggerStatus;
  code?: string;
  error?: string;
}

/** Recent triggers, newest first, with a filter form that works as a plain GET (no script). */
export function triggersPage(view: TriggerListView): string {
  const filters = new URLSearchParams();
  if (view.status) filters.set("status", view.status);
  if (view.code) filters.set("code", view.code);
  if (view.nextCursor) filters.set("cursor", view.nextCursor);
  const body = html`<h1>Triggers</h1>
<form class="filters" method="get" action="/ui/triggers">
<label>Status <select name="status"><option value="">any</option>${PAGE_STATUSES.map(
    (status) =>
      html`<option value="${status}"${view.status === status ? html` selected` : ""}>${status}</option>`,
  )}</select></label>
<label>Diagnostic code <input name="code" value="${view.code ?? ""}" placeholder="agent_timeout"></label>
<button type="submit">Filter</button>
</form>
${view.error ? html`<p class="error" role="alert">${view.error}</p>` : ""}
<table><thead><tr><th>Trigger</th><th>Status</th><th>Source</th><th>Event</th><th>Diagnostic</th><th>Received</th></tr></thead>
<tbody>${view.triggers.map(
    (trigger) =>
      html`<tr><td><a href="/ui/trace/${trigger.id}"><code>${trigger.id}</code></a></td><td>${statusBadge(trigger.status)}</td><td>${trigger.source}</td><td>${trigger.eventName}</td><td>${diagnosticBlock(trigger.diagnostic)}</td><td>${when(trigger.createdAt)}</td></tr>`,
  )}</tbody></table>
${view.triggers.length ? "" : html`<p class="muted">no triggers match</p>`}
${view.nextCursor ? html`<p><a href="/ui/triggers?${filters.toString()}">Older triggers →</a></p>` : ""}`;
  return page("Triggers", body, { signedIn: true });
}
