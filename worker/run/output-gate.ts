import type { ResolvedEvent } from "../event/resolve.ts";
import { isOwnEvent } from "../outputs/own-events.ts";
import { type BreakerDeps, breakerHold, type GatedRun } from "./circuit-breaker.ts";

/**
 * Asked before a run does anything: `wait` when the pipeline's circuit breaker was open at the
 * run's claim (the run goes back to the queue), `own_event` when the event was authored by the
 * pipeline's own identity (the run completes without an agent), null to go ahead.
 */
export function runGate(deps: BreakerDeps, run: GatedRun, event: ResolvedEvent): "wait" | "own_event" | null {
  if (isOwnEvent(deps.config, run.pipeline, event)) {
    deps.logger.info("event authored by the pipeline's own identity: not answered", {
      event: "invocation.own_event",
      pipeline: run.pipeline.name,
      invocation: run.invocationId,
    });
    return "own_event";
  }
  return breakerHold(deps, run) ? "wait" : null;
}
