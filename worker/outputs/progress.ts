import { progressLeftBy } from "../../db/sticky-comments.ts";
import type { Pipeline } from "../../shared/config/types.ts";
import type { ResolvedEvent } from "../event/resolve.ts";
import { PublishError } from "./attempt.ts";
import { pullRefOf } from "./codehost.ts";
import { codehostPublisher, pullRef } from "./publish.ts";
import type { PublishDeps } from "./publish-deps.ts";
import { stampOf } from "./stamp.ts";
import { endText, progressText, stickyBody, writeSticky } from "./sticky.ts";

/**
 * The sticky comments of bindings with `progress: true`: "in progress" when a run starts, one line
 * on how it ended when it published nothing there. Neither ever fails the run: the run's result is
 * what matters, and a note that could not be written is logged.
 */
function progressKeys(pipeline: Pipeline): string[] {
  return Object.entries(pipeline.outputs)
    .filter(([, binding]) => binding.sticky && binding.progress)
    .map(([key]) => key);
}

function noteFailed(deps: PublishDeps, what: string, invocation: string, key: string, error: unknown): void {
  const failure = error instanceof PublishError ? error.failure : undefined;
  deps.logger.warn(`could not write the ${what} note`, {
    event: `output.${what}_failed`,
    invocation,
    key,
    ...(failure ? { status: failure.status } : {}),
    message: failure?.message ?? (error as Error).message,
  });
}

/** Called once a run passed its output gate, before its setup steps. */
export async function announceProgress(
  deps: PublishDeps,
  run: { invocationId: string; triggerId: string | null; pipeline: Pipeline; event: ResolvedEvent },
): Promise<void> {
  const keys = progressKeys(run.pipeline);
  if (keys.length === 0) return;
  const { pipeline, event, invocationId } = run;
  const stamp = await stampOf(deps.pool, {
    pipeline,
    origin: run.triggerId ?? invocationId,
    invocation: invocationId,
  });
  const sha = event.context.sha || null;
  const text = progressText(pipeline.name, sha, invocationId, deps.config.server.publicUrl);
  for (const key of keys) {
    try {
      // a progress note is about the triggering pull request; an event about none gets none
      const ref = pullRef(event);
      const codehost = await codehostPublisher(deps, pipeline, `${ref.owner}/${ref.repo}`);
      const write = { pipeline: pipeline.name, ref, key, invocation: invocationId, seal: stamp.seal, sha };
      await writeSticky(deps.pool, codehost, write, stickyBody(text, stamp, key), "progress");
    } catch (error) {
      noteFailed(deps, "progress", invocationId, key, error);
    }
  }
}

/**
 * Called once a run's end is recorded: each sticky comment it left "in progress" says how it ended
 * (failed or cancelled, with the diagnostic, or finished with nothing for that key). A run handed
 * back to the queue is not over: its next attempt writes the comment.
 */
export async function noteRunEnd(
  deps: PublishDeps,
  invocationId: string,
  pipeline: Pipeline | undefined,
): Promise<void> {
  // no statement at all for the runs of pipelines without progress: most runs (docs/architecture.md)
  if (!pipeline || progressKeys(pipeline).length === 0) return;
  let left: Awaited<ReturnType<typeof progressLeftBy>>;
  try {
    left = await progressLeftBy(deps.pool, invocationId);
  } catch (error) {
    noteFailed(deps, "end", invocationId, "*", error);
    return;
  }
  const { status, diagnostic } = left;
  if (!status || !["completed", "failed", "cancelled"].includes(status)) return;
  for (const row of left.rows) {
    try {
      const ref = pullRefOf(row.repo, row.number);
      const stamp = await stampOf(deps.pool, {
        pipeline,
        origin: left.triggerId ?? invocationId,
        invocation: invocationId,
      });
      const text = endText(pipeline.name, row.sha, invocationId, deps.config.server.publicUrl, {
        status,
        diagnostic,
      });
      const codehost = await codehostPublisher(deps, pipeline, row.repo);
      const write = {
        pipeline: pipeline.name,
        ref,
        key: row.output_key,
        invocation: invocationId,
        seal: stamp.seal,
        sha: row.sha,
      };
      await writeSticky(deps.pool, codehost, write, stickyBody(text, stamp, row.output_key), "ended");
    } catch (error) {
      noteFailed(deps, "end", invocationId, row.output_key, error);
    }
  }
}
