import { progressLeftBy } from "../../db/sticky-comments.ts";
import { botName } from "../../shared/config/authors.ts";
import type { Pipeline } from "../../shared/config/types.ts";
import type { Diagnostic } from "../../shared/diagnostics.ts";
import type { ResolvedEvent } from "../event/resolve.ts";
import { PublishError } from "./attempt.ts";
import { pullRefOf } from "./codehost.ts";
import { deliver } from "./delivery.ts";
import { codehostPublisher, pullRef } from "./publish.ts";
import type { PublishDeps } from "./publish-deps.ts";
import { stampBody } from "./render.ts";
import { stampOf } from "./stamp.ts";
import { endText, inert, progressText, stickyBody, tooLargeText, writeSticky } from "./sticky.ts";

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

/**
 * A review not started because the pull request is too large (worker/run/review-rules.ts, tooLarge) says so:
 * in each sticky comment of the pipeline, or, with none, in one comment on the pull request
 * (published exactly once, as an output). Like the progress note, a failure is logged, never the run's.
 */
export async function noteTooLarge(
  deps: PublishDeps,
  run: { invocationId: string; triggerId: string | null; pipeline: Pipeline; event: ResolvedEvent },
  large: { lines: number; max: number },
): Promise<void> {
  const { pipeline, event, invocationId } = run;
  const stamp = await stampOf(deps.pool, {
    pipeline,
    origin: run.triggerId ?? invocationId,
    invocation: invocationId,
  });
  const sha = event.context.sha || null;
  const word = (pipeline.trigger?.codehost ?? []).find((matcher) => matcher.command)?.command;
  const ask = word ? `@${botName(deps.config)} ${word} --force` : undefined;
  const text = tooLargeText(pipeline.name, sha, invocationId, deps.config.server.publicUrl, {
    ...large,
    file: pipeline.file,
    ...(ask ? { ask } : {}),
  });
  const sticky = Object.entries(pipeline.outputs)
    .filter(([, binding]) => binding.sticky && binding.handler.startsWith("codehost."))
    .map(([key]) => key);
  const keys = sticky.length ? sticky : ["too_large"];
  for (const key of keys) {
    try {
      const ref = pullRef(event);
      const codehost = await codehostPublisher(deps, pipeline, `${ref.owner}/${ref.repo}`);
      const write = { pipeline: pipeline.name, ref, key, invocation: invocationId, seal: stamp.seal, sha };
      // "result": the run's end leaves this comment as it is (noteRunEnd edits "progress" ones only)
      const post = sticky.length
        ? () => writeSticky(deps.pool, codehost, write, stickyBody(text, stamp, key), "result")
        : () => codehost.postComment(ref, stampBody(text, stamp, key));
      const outcome = await deliver(deps.pool, deps.logger, {
        invocationId,
        key,
        handler: "codehost.comment",
        find: sticky.length ? async () => undefined : () => codehost.findComment(ref, stamp, key),
        post,
      });
      if (outcome.status === "failed") throw new PublishError(outcome.failure);
    } catch (error) {
      noteFailed(deps, "too_large", invocationId, key, error);
    }
  }
}

/**
 * A run held by a spent period budget (worker/run/output-gate.ts) says so in each sticky comment
 * with `progress`, with the `budget_wait` diagnostic and when it resumes; its next attempt, once the
 * period resets, writes "in progress" over it. A failure is logged, never the run's.
 */
export async function noteBudgetWait(
  deps: PublishDeps,
  run: { invocationId: string; triggerId: string | null; pipeline: Pipeline; event: ResolvedEvent },
  wait: { until: Date; diagnostic: Diagnostic },
): Promise<void> {
  const keys = progressKeys(run.pipeline);
  if (keys.length === 0) return;
  const { pipeline, event, invocationId } = run;
  const sha = event.context.sha || null;
  const text =
    `⏸ **${pipeline.name}** waits for the budget: it resumes after ${wait.until.toISOString()} ` +
    `${inert(wait.diagnostic.code, 64)} ${inert(wait.diagnostic.message)}`;
  for (const key of keys) {
    try {
      const stamp = await stampOf(deps.pool, {
        pipeline,
        origin: run.triggerId ?? invocationId,
        invocation: invocationId,
      });
      const ref = pullRef(event);
      const codehost = await codehostPublisher(deps, pipeline, `${ref.owner}/${ref.repo}`);
      const write = { pipeline: pipeline.name, ref, key, invocation: invocationId, seal: stamp.seal, sha };
      await writeSticky(deps.pool, codehost, write, stickyBody(text, stamp, key), "progress");
    } catch (error) {
      noteFailed(deps, "budget_wait", invocationId, key, error);
    }
  }
}
