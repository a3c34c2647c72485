import type { LineageArtifact, LineageInvocation, LineageRows, LineageTask } from "../../db/lineage.ts";
import { type DeliveryRow, renderDeliveries } from "./deliveries.ts";
import { html, type SafeHtml } from "./html.ts";
import { diagnosticBlock, durationBetween, page, statusBadge, when } from "./layout.ts";

/** The lineage `svc trace` prints, as a page: trigger, workloads, invocations, tasks, artifacts. */
export function tracePage(resolved: string, lineage: LineageRows, deliveries: DeliveryRow[]): string {
  const body = html`<h1>Trace <code>${resolved}</code></h1>
${lineage.trigger ? triggerSection(lineage.trigger) : html`<p class="muted">no trigger (created through the API)</p>`}
<h2>Workloads</h2>
<table><thead><tr><th>Workload</th><th>Pipeline</th><th>Status</th><th>Owner</th><th>Workspace</th><th>Created</th></tr></thead>
<tbody>${lineage.workloads.map(
    (w) =>
      html`<tr><td><code>${w.id}</code></td><td>${w.pipeline}</td><td>${statusBadge(w.status)}</td><td>${w.owner ?? "—"}</td><td><code>${w.workspace ?? "—"}</code></td><td>${when(w.createdAt)}</td></tr>`,
  )}</tbody></table>
<h2>Invocations</h2>
${lineage.invocations.length ? "" : html`<p class="muted">no invocations</p>`}
${lineage.invocations.map((invocation) =>
  invocationSection(
    invocation,
    lineage.tasks.filter((task) => task.invocationId === invocation.id),
    lineage.artifacts.filter((artifact) => artifact.invocationId === invocation.id),
    deliveries.filter((delivery) => delivery.invocationId === invocation.id),
  ),
)}`;
  return page(`Trace ${resolved}`, body, { signedIn: true });
}

function triggerSection(trigger: Record<string, unknown>): SafeHtml {
  return html`<section class="card" id="trigger">
<h2>Trigger <code>${String(trigger.id)}</code> ${statusBadge(trigger.status)}</h2>
${diagnosticBlock(trigger.diagnostic)}
<dl class="facts">
<dt>Kind</dt><dd>${String(trigger.kind ?? "—")}</dd>
<dt>Source</dt><dd>${String(trigger.source ?? "—")}</dd>
<dt>Event</dt><dd>${String(trigger.eventName ?? "—")}</dd>
<dt>Delivery</dt><dd>${String(trigger.deliveryId ?? "—")}</dd>
<dt>Owner</dt><dd>${String(trigger.owner ?? "—")}</dd>
${trigger.replayOf ? html`<dt>Replay of</dt><dd><a href="/ui/trace/${String(trigger.replayOf)}">${String(trigger.replayOf)}</a></dd>` : ""}
<dt>Received</dt><dd>${when(trigger.createdAt)}</dd>
<dt>Updated</dt><dd>${when(trigger.updatedAt)}</dd>
</dl>
<details id="payload"><summary>Payload</summary><pre>${JSON.stringify(trigger.payload, null, 2) ?? "null"}</pre></details>
</section>`;
}

function invocationSection(
  invocation: LineageInvocation,
  tasks: LineageTask[],
  artifacts: LineageArtifact[],
  deliveries: DeliveryRow[],
): SafeHtml {
  return html`<section class="card invocation" id="${invocation.id}">
<h3><code>${invocation.id}</code> ${statusBadge(invocation.status)}</h3>
${diagnosticBlock(invocation.diagnostic)}
<dl class="facts">
<dt>Target</dt><dd>${invocation.target ?? "—"}</dd>
<dt>Attempts</dt><dd>${invocation.attempts}</dd>
<dt>Started</dt><dd>${when(invocation.startedAt)}</dd>
<dt>Finished</dt><dd>${when(invocation.finishedAt)}</dd>
<dt>Duration</dt><dd>${durationBetween(invocation.startedAt, invocation.finishedAt)}</dd>
</dl>
<h3>Tasks</h3>
${tasks.length ? timeline(invocation, tasks) : html`<p class="muted">no tasks</p>`}
<h3>Artifacts</h3>
${artifacts.length ? artifacts.map(artifactBlock) : html`<p class="muted">no artifacts</p>`}
<h3>Output deliveries</h3>
${renderDeliveries(deliveries)}
</section>`;
}

/**
 * Each task as a bar on the invocation's time axis. SVG geometry is markup, not style, so the
 * strict CSP (no inline style) still allows it.
 */
function timeline(invocation: LineageInvocation, tasks: LineageTask[]): SafeHtml {
  const starts = tasks.map((task) => task.startedAt.getTime());
  const ends = tasks.map((task) => (task.finishedAt ?? task.startedAt).getTime());
  const origin = Math.min(...starts, invocation.startedAt?.getTime() ?? Number.POSITIVE_INFINITY);
  const span = Math.max(1, Math.max(...ends, invocation.finishedAt?.getTime() ?? 0) - origin);
  const percent = (ms: number) => ((ms / span) * 100).toFixed(2);
  return html`<table class="tasks"><thead><tr><th>#</th><th>Task</th><th>Status</th><th>Exit</th><th>Tokens in/out</th><th>Duration</th><th>Timeline</th></tr></thead><tbody>${asTree(
    tasks,
  ).map((task) => {
    const start = task.startedAt.getTime() - origin;
    const width = Math.max(
      (task.finishedAt ?? task.startedAt).getTime() - task.startedAt.getTime(),
      span / 200,
    );
    const failed = !["completed", "running", "pending", "queued"].includes(task.status);
    const label = task.parentId
      ? html`↳ ${task.name}${task.skill ? ` (${task.skill})` : ""}${task.target ? html` <span class="muted">on ${task.target}</span>` : ""}`
      : html`${task.kind}: ${task.name}`;
    return html`<tr${task.parentId ? html` class="subtask"` : ""}><td>${task.seq}</td><td>${label}</td><td>${statusBadge(task.status)}${diagnosticBlock(task.diagnostic)}</td><td>${task.exitCode ?? "—"}</td><td>${task.usage ? usageCell(task.usage) : "—"}</td><td>${durationBetween(task.startedAt, task.finishedAt)}</td>
<td><svg class="timeline" viewBox="0 0 100 10" preserveAspectRatio="none" role="img" aria-label="${`${task.name} from +${start} ms`}"><rect class="track" x="0" y="0" width="100" height="10"></rect><rect class="${failed ? "bar-failed" : "bar"}" x="${percent(start)}" y="0" width="${percent(width)}" height="10"></rect></svg></td></tr>`;
  })}</tbody></table>`;
}

/**
 * An orchestrator's tasks right under the agent task that created them (their `parentId`), so the
 * timeline reads as the tree `svc trace` prints: the orchestrator's bar spans theirs.
 */
function asTree(tasks: LineageTask[]): LineageTask[] {
  const ordered: LineageTask[] = [];
  for (const task of tasks.filter((row) => !row.parentId)) {
    ordered.push(task, ...tasks.filter((row) => row.parentId === task.id));
  }
  // a child whose parent is not in this list (never expected) still shows
  return [...ordered, ...tasks.filter((row) => !ordered.includes(row))];
}

function artifactBlock(artifact: LineageArtifact): SafeHtml {
  return html`<details class="artifact"><summary><code>${artifact.name}</code> <span class="muted">${artifact.mediaType}, ${artifact.size} bytes</span></summary>
${artifact.rendered === null ? html`<p class="muted">no text kept (${artifact.path ?? "no path"})</p>` : html`<pre>${artifact.rendered}</pre>`}
</details>`;
}

/** `1200 / 80`, then what else the gateway read: the cache's share, the requests, the price. */
function usageCell(usage: NonNullable<LineageTask["usage"]>): string {
  const extra = [
    usage.cache_read_tokens ? `cache ${usage.cache_read_tokens}` : "",
    usage.requests === undefined ? "" : `${usage.requests} req`,
    usage.cost_usd === undefined ? "" : `$${usage.cost_usd.toFixed(4)}`,
  ].filter(Boolean);
  return `${usage.input_tokens} / ${usage.output_tokens}${extra.length ? ` (${extra.join(", ")})` : ""}`;
}
