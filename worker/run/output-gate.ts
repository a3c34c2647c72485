import type { Pipeline } from "../../shared/config/types.ts";
import type { ResolvedEvent } from "../event/resolve.ts";
import { isOwnEvent } from "../outputs/own-events.ts";
import { type BreakerDeps, breakerHold } from "./circuit-breaker.ts";

/**
 * Asked before a run does anything: `wait` when the pipeline's circuit breaker is open (the run
 * goes back to the queue), `own_event` when the event was authored by the pipeline's own identity
 * (the run completes without an agent), null to go ahead.
 */
export async function runGate(
  deps: BreakerDeps,
  pipeline: Pipeline,
  invocationId: string,
  event: ResolvedEvent,
): Promise<"wait" | "own_event" | null> {
  if (isOwnEvent(deps.config, pipeline, event)) {
    deps.logger.info("event authored by the pipeline's own identity: not answered", {
      event: "invocation.own_event",
      pipeline: pipeline.name,
      invocation: invocationId,
    });
    return "own_event";
  }
  return (await breakerHold(deps, pipeline, invocationId)) ? "wait" : null;
}
