import type { Pipeline } from "../../shared/config/types.ts";
import type { EventContext } from "./context.ts";

/**
 * The key of the concurrency group an event's run of `pipeline` joins, or null when the pipeline
 * declares no `concurrency`, or the run stands `apart` (an eval's replay, a run whose outputs are
 * held back): it runs beside the live ones, and must neither cancel nor wait for the live review of
 * that pull request. The key names what it groups by, so keys of different kinds never
 * meet: `pull_request:<pipeline>:<repo>#<number>`, `repository:<pipeline>:<repo>`,
 * `pipeline:<pipeline>`. A `pull_request` group whose event names no number (a push, a schedule)
 * groups by repository instead; an event that names no repository groups by pipeline.
 */
export function concurrencyGroup(
  pipeline: Pick<Pipeline, "name" | "concurrency">,
  context: Pick<EventContext, "repo" | "number">,
  apart = false,
): string | null {
  const kind = pipeline.concurrency?.group;
  if (!kind || apart) return null;
  if (kind === "pull_request" && context.repo && context.number !== undefined)
    return `pull_request:${pipeline.name}:${context.repo}#${context.number}`;
  if (kind !== "pipeline" && context.repo) return `repository:${pipeline.name}:${context.repo}`;
  return `pipeline:${pipeline.name}`;
}
