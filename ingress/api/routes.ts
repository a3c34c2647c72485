import type { Scope } from "../../shared/scopes.ts";
import { AUTHENTICATED } from "../auth/principal.ts";
import { doctorRoute, drainRoute, purgeRoute, reconcileRoute, resumeRoute } from "./handlers/admin.ts";
import { compareEvalsRoute, evalStatsRoute } from "./handlers/eval-stats.ts";
import {
  createEvalRoute,
  deleteEvalRoute,
  getEvalRoute,
  listEvalsRoute,
  patchEvalRoute,
  runEvalsRoute,
} from "./handlers/evals.ts";
import {
  dispatchUrlRoute,
  firePipelineRoute,
  replayTriggerRoute,
  runScheduleRoute,
} from "./handlers/firing.ts";
import { runHostToolRoute } from "./handlers/host-tools.ts";
import { askRoute, knowledgeRoute } from "./handlers/knowledge.ts";
import { mcpForbidden, mcpRoute } from "./handlers/mcp.ts";
import { getNoteRoute, listNotesRoute } from "./handlers/notes.ts";
import { queueStatusRoute } from "./handlers/queue.ts";
import { listPullsRoute, listReposRoute } from "./handlers/repos.ts";
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
import type { JsonSchema, SchemaName } from "./schemas.ts";
import type { Reply, RouteContext } from "./types.ts";

/**
 * THE route table of the daemon API: path, method, required scope and handler. The router mounts
 * exactly these, the scope section of docs/api.md is rendered from them, and the scope-matrix test
 * walks them, so access control cannot drift from what is served. `/` and `/health` (no scope)
 * belong to the ingress app, the webhook routes to their own verification.
 */
export interface RouteSpec {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  /** Express path; `:name` segments are parameters */
  path: string;
  /** a vocabulary scope; `host:execute:<name>` takes the `:name` parameter; `authenticated` = any valid token */
  scope: Scope | "host:execute:<name>" | typeof AUTHENTICATED;
  /** a second vocabulary scope the caller must hold as well (`POST /evals/run` fires pipelines) */
  alsoScope?: Scope;
  /** workloads reached through it are limited to the caller's own unless it crosses the owner boundary */
  ownerBound?: boolean;
  summary: string;
  handler: (ctx: RouteContext) => Promise<Reply>;
  /** the answer to a caller refused by scope, when the route speaks its own protocol */
  refused?: () => Reply;
  /** OpenAPI (ingress/api/openapi.ts): query parameters, name → meaning */
  query?: Record<string, string>;
  /** OpenAPI: the success answer; absent = 200 with a default description */
  response?: { status?: number; description: string; schema?: SchemaName };
  /** OpenAPI: the JSON body of a POST, as a JSON Schema; absent = any object */
  body?: JsonSchema;
}

const TRIGGER_FILTERS = {
  status: "queued, running, completed, error or discarded",
  code: "a diagnostic code such as agent_timeout",
  source: "a webhook source or trigger source name",
  since: "an ISO time or a duration such as 2h",
};

/** What a team states about an eval case (POST /evals, PATCH /evals/:id). */
const EVAL_CASE_FIELDS = {
  expected: { enum: ["pass", "fail"] },
  expectedResult: { type: ["object", "null"] },
  notes: { type: "string" },
  tags: { type: "array", items: { type: "string" } },
};

export const API_ROUTES: readonly RouteSpec[] = [
  {
    method: "GET",
    path: "/whoami",
    scope: AUTHENTICATED,
    summary: "the caller's identity and scopes",
    handler: whoamiRoute,
    response: { description: "the caller's identity and scopes", schema: "Whoami" },
  },

  {
    method: "GET",
    path: "/triggers",
    scope: "triggers:read",
    summary: "list triggers without payload; filters status, code, source, since, limit, cursor",
    handler: listTriggersRoute,
    query: { ...TRIGGER_FILTERS, limit: "1-500, default 50", cursor: "`nextCursor` of the previous page" },
    response: { description: "a page of triggers, newest first", schema: "TriggerList" },
  },
  {
    method: "GET",
    path: "/triggers/stats",
    scope: "triggers:read",
    summary: "trigger counts grouped by code, source or kind (`by`), same filters",
    handler: triggerStatsRoute,
    query: { ...TRIGGER_FILTERS, by: "code, source or kind (default code)" },
  },
  {
    method: "GET",
    path: "/triggers/:id",
    scope: "triggers:read",
    summary: "one trigger with payload and diagnostic",
    handler: getTriggerRoute,
    response: { description: "the trigger", schema: "TriggerAnswer" },
  },
  {
    method: "GET",
    path: "/trace/:id",
    scope: "triggers:read",
    summary: "lineage of a trg_/run_/inv_/tsk_ id or unique prefix; 409 ambiguous_id lists candidates",
    handler: traceRoute,
    response: { description: "the lineage around the id", schema: "Trace" },
  },

  {
    method: "POST",
    path: "/pipelines/:name/fire",
    scope: "pipelines:invoke",
    summary: "fire a pipeline by name with `args` gated by its declared args",
    handler: firePipelineRoute,
    response: { status: 202, description: "fired; names the new trigger" },
    body: { type: "object", properties: { args: { type: "object" } } },
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
    response: { status: 202, description: "dispatched; names the new trigger" },
    body: {
      type: "object",
      required: ["pipeline", "url"],
      properties: { pipeline: { type: "string" }, url: { type: "string" }, args: { type: "object" } },
    },
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
    path: "/notes",
    scope: "workloads:read",
    summary:
      "notes kept by agents and imports, newest first; filters pipeline, agent, repo, tag, q, limit (every owner's)",
    handler: listNotesRoute,
  },
  {
    method: "GET",
    path: "/notes/:id",
    scope: "workloads:read",
    summary: "one note (not_…)",
    handler: getNoteRoute,
  },

  {
    method: "GET",
    path: "/repos",
    scope: "repos:read",
    summary:
      "daemon.yaml's repos: default branch (code host, default identity, cached 60s) or the code host's refusal, and svc's last run",
    handler: listReposRoute,
  },
  {
    method: "GET",
    path: "/repos/:owner/:name/pulls",
    scope: "repos:read",
    summary:
      "open pull requests of a configured repo (all pages), each with the pipelines svc ran: runs, last status, diagnostic, output links",
    handler: listPullsRoute,
  },

  {
    method: "POST",
    path: "/evals",
    scope: "evals:write",
    summary:
      "curate a finished invocation into an eval case: `{ invocation, expected: pass|fail, expectedResult?, notes?, tags? }`",
    handler: createEvalRoute,
    response: {
      status: 201,
      description: "the case, with the event, pipeline, version and outcome it copied",
    },
    body: {
      type: "object",
      required: ["invocation", "expected"],
      properties: { invocation: { type: "string" }, ...EVAL_CASE_FIELDS },
    },
  },
  {
    method: "GET",
    path: "/evals",
    scope: "evals:write",
    summary: "eval cases, newest first; filters pipeline, tag, outcome (expected pass or fail), limit",
    handler: listEvalsRoute,
    query: {
      pipeline: "a pipeline name",
      tag: "a tag",
      outcome: "pass or fail (the expected outcome)",
      limit: "1-1000, default 100",
    },
  },
  {
    method: "GET",
    path: "/evals/stats",
    scope: "evals:write",
    summary:
      "per version × target: runs, completed and output_failed rates, codes, p50/p90 duration, token usage; agreement of curated cases and eval runs",
    handler: evalStatsRoute,
    query: { pipeline: "a pipeline name (required)", since: "an ISO time or a duration such as 7d" },
  },
  {
    method: "GET",
    path: "/evals/compare",
    scope: "evals:write",
    summary:
      "cohort b against a: rates with 95% Wilson intervals and Fisher/chi-square p, p50 durations with Mann-Whitney U p; says when too small",
    handler: compareEvalsRoute,
    query: {
      pipeline: "a pipeline name (required)",
      a: "a cohort: version:<v>, target:<name>, dates:<from>..<to>, run:evr_…, original:evr_… or cases[:<tag>]",
      b: "a cohort, as a",
    },
  },
  {
    method: "POST",
    path: "/evals/run",
    scope: "evals:write",
    alsoScope: "pipelines:invoke",
    summary:
      "replay curated cases `{ pipeline, cases?, tag? }` through the pipeline as configured now (replay triggers of a new eval run)",
    handler: runEvalsRoute,
    response: { status: 202, description: "the eval run, its triggers and the compare query for it" },
    body: {
      type: "object",
      required: ["pipeline"],
      properties: {
        pipeline: { type: "string" },
        cases: { type: "array", items: { type: "string" } },
        tag: { type: "string" },
      },
    },
  },
  {
    method: "GET",
    path: "/evals/:id",
    scope: "evals:write",
    summary: "one eval case (evc_…)",
    handler: getEvalRoute,
  },
  {
    method: "PATCH",
    path: "/evals/:id",
    scope: "evals:write",
    summary: "change an eval case's `expected`, `expectedResult`, `notes` or `tags`",
    handler: patchEvalRoute,
    body: {
      type: "object",
      properties: EVAL_CASE_FIELDS,
    },
  },
  {
    method: "DELETE",
    path: "/evals/:id",
    scope: "evals:write",
    summary: "delete an eval case",
    handler: deleteEvalRoute,
    response: { status: 204, description: "deleted" },
  },

  {
    method: "GET",
    path: "/queue/status",
    scope: "admin",
    summary:
      "active, waiting, delayed, failed counts, open circuit breakers; verbose=1 adds details.<state> jobs (since, limit, offset)",
    handler: queueStatusRoute,
    query: {
      verbose: "1 adds details.<state> jobs",
      since: "with verbose",
      limit: "with verbose",
      offset: "with verbose",
    },
    response: { description: "job counts by state", schema: "QueueStatus" },
  },
  {
    method: "POST",
    path: "/admin/drain",
    scope: "admin",
    summary: "stop workers claiming new work",
    handler: drainRoute,
  },
  {
    method: "POST",
    path: "/admin/resume",
    scope: "admin",
    summary: "undo a drain; `{ pipeline }` closes that pipeline's open circuit breaker instead",
    handler: resumeRoute,
  },
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
      "tool protocol (MCP, Streamable HTTP, stateless): read tools need mcp:read, write tools mcp:write, host_<name> host:execute:<name>; GET/DELETE 405",
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

/** The scopes a request to `route` needs, every one of them, with `<name>` filled from the path parameters. */
export function requiredScopes(route: RouteSpec, params: Record<string, string | undefined>): string[] {
  const first = route.scope === "host:execute:<name>" ? `host:execute:${params.name ?? ""}` : route.scope;
  return route.alsoScope ? [first, route.alsoScope] : [first];
}
