import { wakeWorkers } from "../../db/boss.ts";
import { notifyInvocationCancelled } from "../../db/invocations.ts";
import { postReaction } from "../outputs/reactions.ts";
import { type ClaimedRun, type DispatchDeps, type DispatchOutcome, OVERTAKEN, WAITING } from "./dispatch.ts";

/** After the dispatch transaction committed: logs, and wakes the lanes it sent jobs to. */
export function afterDispatch(
  deps: DispatchDeps,
  triggerId: string,
  outcome: DispatchOutcome,
): ClaimedRun | undefined {
  const { logger } = deps;
  if ((outcome.kind === "none" || outcome.kind === "dispatched") && outcome.gated)
    logger.info("pipelines gated by the event's author", {
      event: "dispatch.gated",
      trigger: triggerId,
      pipelines: outcome.gated.pipelines,
      gate: outcome.gated.gate,
    });
  if ((outcome.kind === "none" || outcome.kind === "dispatched") && outcome.reaction)
    void postReaction(deps, outcome.reaction);
  switch (outcome.kind) {
    case "missing":
      logger.warn("dispatch job names no trigger", { event: "dispatch.missing_trigger", trigger: triggerId });
      break;
    case "discarded":
      logger.info("trigger discarded", {
        event: "trigger.discarded",
        trigger: triggerId,
        code: outcome.diagnostic.code,
      });
      break;
    case "none":
      logger.info("trigger fired no pipeline", {
        event: "trigger.no_matching_pipeline",
        trigger: triggerId,
        code: outcome.diagnostic.code,
      });
      break;
    case "dispatched":
      // after the commit, never inside it (see wakeWorkers): the lane's workers look at once
      for (const lane of new Set(outcome.created.map((entry) => entry.lane)))
        if (lane !== "in-process" && lane !== WAITING && lane !== OVERTAKEN) wakeWorkers(deps.boss, lane);
      for (const entry of outcome.created) {
        logger.info("workload created", { event: "trigger.dispatched", trigger: triggerId, ...entry });
      }
      for (const run of outcome.superseded) {
        logger.info("invocation superseded", {
          event: "invocation.superseded",
          invocation: run.id,
          by: triggerId,
        });
        // the worker holding it stops at once instead of at its next heartbeat; a lost NOTIFY is
        // caught by that heartbeat, so a failure here changes nothing
        if (run.was === "running") void notifyInvocationCancelled(deps.pool, run.id).catch(() => {});
      }
      return outcome.claimed;
    default:
      break;
  }
  return undefined;
}
