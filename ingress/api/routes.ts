import type { Scope } from "../../shared/scopes.ts";
import { AUTHENTICATED } from "../auth/principal.ts";
import type { Reply, RouteContext } from "./context.ts";
import { doctorRoute, drainRoute, purgeRoute, reconcileRoute, resumeRoute } from "./handlers/admin.ts";
import {
  dispatchUrlRoute,
  firePipelineRoute,
  replayTriggerRoute,
  runScheduleRoute,
} from "./handlers/firing.ts";
import { runHostToolRoute } from "./handlers/host-tools.ts";
import { askRoute, knowledgeRoute } from "./handlers/knowledge.ts";
import { mcpForbidden, mcpRoute } from "./handlers/mcp.ts";
import { queueStatusRoute } from "./handlers/queue.ts";
import { listSchedulesRoute } from "./handlers/schedules.ts";
import { traceRoute } from "./handlers/trace.ts";
import { getTriggerRoute, listTriggersRoute, triggerStatsRoute } from "./handlers/triggers.ts";
import { whoamiRoute } from "./handlers/whoami.ts";
import {
  cancelInvocationRoute,
  closeWorkloadRoute,
  createWorkloadRoute,
  getInvocationRoute,
  getWorkloadRoute,
  invocationArtifactsRoute,
  listWorkloadsRoute,
  submitInvocationRoute,
} from "./handlers/workloads.ts";

/**
 * THE route table of the daemon API: path, method, required scope and handler. The router mounts
 * exactly these, the scope section of docs/api.md is rendered from them, and the scope-matrix test
 * walks them, so access control cannot drift from what is served. `/` and `/health` (no scope)
 * belong to the ingress app, the webhook routes to their own verification.
 */
export interface RouteSpec {
  method: "GET" | "POST";
  /** Express path; `:name` segments are parameters */
  path: string;
  /** a vocabulary scope; `host:execute:<name>` takes the `:name` parameter; `authenticated` = any valid token */
  scope: Scope | "host:execute:<name>" | typeof AUTHENTICATED;
  /** workloads reached through it are limited to the caller's own unless it crosses the owner boundary */
  ownerBound?: boolean;
  summary: string;
  handler: (ctx: RouteContext) => Promise<Reply>;
  /** the answer to a caller refused by scope, when the route speaks its own protocol */
  refused?: () => Reply;
}

export const API_ROUTES: readonly RouteSpec[] = [
  {
    method: "GET",
    path: "/whoami",
    scope: AUTHENTICATED,
    summary: "the caller's identity and scopes",
    handler: whoamiRoute,
  },

  {
    method: "GET",
    path: "/triggers",
    scope: "triggers:read",
    summary: "list triggers without payload; filters status, code, source, since, limit, cursor",
    handler: listTriggersRoute,
  },
  {
    method: "GET",
    path: "/triggers/stats",
    scope: "triggers:read",
    summary: "trigger counts grouped by code, source or kind (`by`), same filters",
    handler: triggerStatsRoute,
  },
  {
    method: "GET",
    path: "/triggers/:id",
    scope: "triggers:read",
    summary: "one trigger with payload and diagnostic",
    handler: getTriggerRoute,
  },
  {
    method: "GET",
    path: "/trace/:id",
    scope: "triggers:read",
    summary: "lineage of a trg_/run_/inv_/tsk_ id or unique prefix; 409 ambiguous_id lists candidates",
    handler: traceRoute,
  },

  {
    method: "POST",
    path: "/pipelines/:name/fire",
    scope: "pipelines:invoke",
    summary: "fire a pipeline by name with `args` gated by its declared args",
    handler: firePipelineRoute,
  },
  {
    method: "POST",
    path: "/triggers/:id/replay",
    scope: "pipelines:invoke",
    summary: "replay a trigger (new trigger with replay_of)",
    handler: replayTriggerRoute,
  },
  {
    method: "POST",
    path: "/dispatch",
    scope: "pipelines:invoke",
    summary: "dispatch a URL to a pipeline: `{ pipeline, url, args? }`",
    handler: dispatchUrlRoute,
  },
  {
    method: "POST",
    path: "/schedules/:name/run",
    scope: "pipelines:invoke",
    summary: "fire the named schedule now with its args (trigger kind `schedule`)",
    handler: runScheduleRoute,
  },
  {
    method: "GET",
    path: "/schedules",
    scope: "triggers:read",
    summary: "configured schedules: pipeline, cron, timezone, next run, last run and its trigger",
    handler: listSchedulesRoute,
  },

  {
    method: "GET",
    path: "/workloads",
    scope: "workloads:read",
    ownerBound: true,
    summary: "list workloads (own only without workloads:admin)",
    handler: listWorkloadsRoute,
  },
  {
    method: "GET",
    path: "/workloads/:id",
    scope: "workloads:read",
    ownerBound: true,
    summary: "one workload and its invocations",
    handler: getWorkloadRoute,
  },
  {
    method: "GET",
    path: "/invocations/:id",
    scope: "workloads:read",
    ownerBound: true,
    summary: "one invocation with diagnostic",
    handler: getInvocationRoute,
  },
  {
    method: "GET",
    path: "/invocations/:id/artifacts",
    scope: "workloads:read",
    ownerBound: true,
    summary: "an invocation's artifacts with rendered text",
    handler: invocationArtifactsRoute,
  },
  {
    method: "POST",
    path: "/workloads",
    scope: "workloads:write",
    ownerBound: true,
    summary: "create a workload for a pipeline: `{ pipeline }`",
    handler: createWorkloadRoute,
  },
  {
    method: "POST",
    path: "/workloads/:id/close",
    scope: "workloads:write",
    ownerBound: true,
    summary: "close a workload with no queued or running invocations",
    handler: closeWorkloadRoute,
  },
  {
    method: "POST",
    path: "/workloads/:id/invocations",
    scope: "workloads:write",
    ownerBound: true,
    summary: "submit an invocation to an open workload",
    handler: submitInvocationRoute,
  },
  {
    method: "POST",
    path: "/invocations/:id/cancel",
    scope: "workloads:write",
    ownerBound: true,
    summary: "cancel a queued or running invocation",
    handler: cancelInvocationRoute,
  },

  {
    method: "POST",
    path: "/ask",
    scope: "knowledge:read",
    summary:
      "answer `{ question, targets?, method? }` from the knowledge with the first usable target; 503 lists each target's reason",
    handler: askRoute,
  },
  {
    method: "GET",
    path: "/knowledge",
    scope: "knowledge:read",
    summary: "the knowledge documents (path, title, size, indexed_at); `q` searches them (method, limit)",
    handler: knowledgeRoute,
  },

  {
    method: "GET",
    path: "/queue/status",
    scope: "admin",
    summary:
      "active, waiting, delayed, failed counts; verbose=1 adds details.<state> jobs (since, limit, offset)",
    handler: queueStatusRoute,
  },
  {
    method: "POST",
    path: "/admin/drain",
    scope: "admin",
    summary: "stop workers claiming new work",
    handler: drainRoute,
  },
  { method: "POST", path: "/admin/resume", scope: "admin", summary: "undo a drain", handler: resumeRoute },
  {
    method: "POST",
    path: "/admin/reconcile",
    scope: "admin",
    summary: "give every queued trigger and queued or stale invocation a live job: `{ olderThan? }`",
    handler: reconcileRoute,
  },
  {
    method: "POST",
    path: "/admin/purge",
    scope: "admin",
    summary: "delete failed-job history finished before `before` (default now)",
    handler: purgeRoute,
  },
  {
    method: "GET",
    path: "/admin/doctor",
    scope: "admin",
    summary: "daemon probes for `svc doctor`",
    handler: doctorRoute,
  },

  {
    method: "POST",
    path: "/host-tools/:name",
    scope: "host:execute:<name>",
    summary: "run host tool <name>; refused to sandboxed-agent tokens",
    handler: runHostToolRoute,
  },
  {
    method: "POST",
    path: "/mcp",
    scope: "mcp:read",
    summary:
      "tool protocol (JSON-RPC): tools/list needs mcp:read, tools/call mcp:write (+ host:execute:<name>)",
    handler: mcpRoute,
    refused: () => mcpForbidden(),
  },
];

/** Removed in earlier releases; they answer 404 with the replacement. `POST /events` stays a webhook alias. */
export const REMOVED_ROUTES: readonly { method: "GET"; path: string; replacement: string }[] = [
  { method: "GET", path: "/events", replacement: "GET /triggers" },
  { method: "GET", path: "/events/stats", replacement: "GET /triggers/stats" },
  { method: "GET", path: "/events/:id", replacement: "GET /triggers/:id" },
  { method: "GET", path: "/events/:id/fields", replacement: "GET /triggers/:id" },
];

/** The scope a request to `route` needs, with `<name>` filled from the path parameters. */
export function requiredScope(route: RouteSpec, params: Record<string, string | undefined>): string {
  return route.scope === "host:execute:<name>" ? `host:execute:${params.name ?? ""}` : route.scope;
}
