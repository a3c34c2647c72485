import { compareEvalsRoute, evalStatsRoute } from "../handlers/eval-stats.ts";
import {
  createEvalRoute,
  deleteEvalRoute,
  getEvalRoute,
  listEvalsRoute,
  patchEvalRoute,
  runEvalsRoute,
} from "../handlers/evals.ts";
import type { RouteSpec } from "../types.ts";

/** What a team states about an eval case (POST /evals, PATCH /evals/:id). */
const EVAL_CASE_FIELDS = {
  expected: { enum: ["pass", "fail"] },
  expectedResult: { type: ["object", "null"] },
  notes: { type: "string" },
  tags: { type: "array", items: { type: "string" } },
};

export const EVAL_ROUTES: readonly RouteSpec[] = [
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
      "cohort b against a: rates with 95% Wilson intervals and Fisher/chi-square p, p50 durations with Mann-Whitney U p; says when too small. `shadow=<pipeline>`: its live version against its shadow candidate, judged by what people did with their findings",
    handler: compareEvalsRoute,
    query: {
      pipeline: "a pipeline name (required)",
      a: "a cohort: version:<v>, target:<name>, dates:<from>..<to>, run:evr_…, original:evr_… or cases[:<tag>]",
      b: "a cohort, as a",
      shadow:
        "a pipeline with a shadow version: compares its live version with the candidate instead of two cohorts (not with a or b)",
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
];
