import { costsRoute } from "../handlers/costs.ts";
import {
  dispatchUrlRoute,
  firePipelineRoute,
  replayTriggerRoute,
  runScheduleRoute,
} from "../handlers/firing.ts";
import { listSchedulesRoute } from "../handlers/schedules.ts";
import { traceRoute } from "../handlers/trace.ts";
import { getTriggerRoute, listTriggersRoute, triggerStatsRoute } from "../handlers/triggers.ts";
import type { RouteSpec } from "../types.ts";

const TRIGGER_FILTERS = {
  status: "queued, running, completed, error or discarded",
  code: "a diagnostic code such as agent_timeout",
  source: "a webhook source or trigger source name",
  since: "an ISO time or a duration such as 2h",
};

export const TRIGGER_ROUTES: readonly RouteSpec[] = [
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
    path: "/costs",
    scope: "triggers:read",
    summary:
      "tokens and USD (at the targets' `price`) of agent tasks per repo, pipeline or author (`by`), totals and per day",
    handler: costsRoute,
    query: {
      by: "repo, pipeline or author (default pipeline)",
      since: "an ISO time or a duration such as 30d (default 30d)",
    },
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
];
