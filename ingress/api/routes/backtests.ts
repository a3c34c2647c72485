import { createBacktestRoute, getBacktestRoute, listBacktestsRoute } from "../handlers/backtests.ts";
import type { RouteSpec } from "../types.ts";

/** Backtests (issue 57): a pipeline's candidate version replayed on merged pull requests, outputs held back. */
export const BACKTEST_ROUTES: readonly RouteSpec[] = [
  {
    method: "POST",
    path: "/evals/backtests",
    scope: "evals:write",
    alsoScope: "pipelines:invoke",
    summary:
      "replay the candidate `{ pipeline, version_file, last | pulls, at?, limit?, replay_answers? }` (the pipeline's shadow.version_file) on the recorded events of merged pull requests, each at its old head, outputs held back",
    handler: createBacktestRoute,
    response: {
      status: 202,
      description:
        "the backtest id, the pull requests it replays (event, old head, final head) and those skipped",
    },
    body: {
      type: "object",
      required: ["pipeline", "version_file"],
      properties: {
        pipeline: { type: "string" },
        version_file: { type: "string" },
        last: { type: "string" },
        pulls: { type: "array", items: { type: "string" } },
        at: { enum: ["first", "last"] },
        limit: { type: "integer" },
        replay_answers: { type: "boolean" },
      },
    },
  },
  {
    method: "GET",
    path: "/evals/backtests",
    scope: "evals:write",
    summary:
      "the newest backtests, of `pipeline` or all (`limit`, default 20): id, pipeline, candidate and live versions, when, how many pull requests, runs ended and compared",
    handler: listBacktestsRoute,
    query: {
      pipeline: "only this pipeline's backtests",
      limit: "at most this many, 1 to 200 (default 20)",
    },
  },
  {
    method: "GET",
    path: "/evals/backtests/:id",
    scope: "evals:write",
    summary:
      "a backtest (bkt_…): progress, per pull request the candidate's and the live version's findings on lines humans commented and later commits changed, totals with 95% Wilson intervals",
    handler: getBacktestRoute,
  },
];
