import { ownReviewIds } from "../../db/output-deliveries.ts";
import type { OutputBinding } from "../../shared/config/types.ts";
import type { ReviewResult } from "../../shared/output-schemas.ts";
import type { ResolvedEvent } from "../event/resolve.ts";
import { PublishError } from "./attempt.ts";
import type { CodehostPublisher, PullRef, ReviewComment } from "./codehost.ts";
import type { DeliveryWork } from "./delivery.ts";
import { bodyWithMoved, diffMap, type InlineComment, placeComments } from "./diff-lines.ts";
import { bodyWithRepeated, dropRepeated, standingFingerprints } from "./findings.ts";
import type { PublishDeps } from "./publish-deps.ts";
import { type Stamp, stampBody } from "./render.ts";
import { type ReviewThread, resolveThread, reviewThreads } from "./review-threads.ts";
import { stickyBody, writeSticky } from "./sticky.ts";

export type Work = Omit<DeliveryWork, "invocationId" | "handler" | "stillHeld"> & { handler?: string };

/**
 * A review's deliveries: the review (its inline findings, those already standing on the pull
 * request left out and counted), and with `sticky` its body in the sticky comment instead, the
 * review itself then posted only when it carries findings or a verdict. `review` is built after the
 * summary landed, so it can link to it.
 */
export interface ReviewWork {
  summary?: Work;
  review: (summaryUrl: string | null) => Work | null;
}

/**
 * What a review would post, read from the host without writing to it: the inline findings that
 * land in the diff and are not standing on the pull request already (`fresh`), and the body with
 * the findings outside the diff moved into it and the repeated ones counted. A run whose outputs
 * are held back (held.ts) records exactly this.
 */
export interface ReviewPlan {
  text: string;
  fresh: InlineComment[];
  /** svc's outdated threads; with `resolve_outdated`, publishing resolves those of its own reviews */
  threads: ReviewThread[];
  own: ReadonlySet<string>;
}

export async function planReview(
  deps: PublishDeps,
  codehost: CodehostPublisher,
  ref: PullRef,
  binding: OutputBinding,
  review: ReviewResult,
): Promise<ReviewPlan> {
  const comments = review.comments ?? [];
  const files = comments.length ? await codehost.listFiles(ref) : [];
  // the host refuses a whole review when one inline comment is outside the diff
  const { inline, moved } = placeComments(diffMap(files), comments);
  const existing = inline.length > 0 || binding.resolveOutdated ? await codehost.listReviewComments(ref) : [];
  const threads = binding.resolveOutdated ? await reviewThreads(codehost, ref) : [];
  const own = await ownReviewIds(deps.pool, reviewIdsOf(existing, threads));
  const { fresh, repeated } = dropRepeated(files, inline, standingFingerprints(existing, own));
  return { text: bodyWithRepeated(bodyWithMoved(review.body, moved), repeated), fresh, threads, own };
}

export async function reviewWork(
  deps: PublishDeps,
  codehost: CodehostPublisher,
  run: { event: ResolvedEvent; ref: PullRef; stamp: Stamp; key: string; binding: OutputBinding },
  review: ReviewResult,
): Promise<ReviewWork> {
  const { event, ref, stamp, key, binding } = run;
  const { text, fresh, threads, own } = await planReview(deps, codehost, ref, binding, review);
  for (const thread of threads) {
    if (!thread.isOutdated || thread.isResolved || !own.has(String(thread.reviewId))) continue;
    await resolveThread(codehost, thread.id).catch((error) => {
      // a thread left open is noise, not a lost result: the review is still posted
      if (!(error instanceof PublishError)) throw error;
      deps.logger.warn("could not resolve an outdated review thread", {
        event: "output.resolve_failed",
        key,
        thread: thread.id,
        status: error.failure.status,
        message: error.failure.message,
      });
    });
  }
  const post = (body: string) => () =>
    codehost.postReview(ref, { commitId: event.context.sha, event: review.event, body, comments: fresh });
  const find = () => codehost.findReview(ref, stamp, key);
  if (!binding.sticky) return { review: () => ({ key, find, post: post(stampBody(text, stamp, key)) }) };
  const sha = event.context.sha || null;
  const write = { pipeline: stamp.pipeline, ref, key, invocation: stamp.invocation, seal: stamp.seal, sha };
  return {
    summary: {
      key: `${key}.summary`,
      handler: "codehost.comment",
      // every retry goes through writeSticky, which edits rather than posts again
      find: async () => undefined,
      post: () => writeSticky(deps.pool, codehost, write, stickyBody(text, stamp, key), "result"),
    },
    review: (summaryUrl) => {
      if (fresh.length === 0 && review.event === "COMMENT") return null;
      const pointer = summaryUrl ? `Summary: ${summaryUrl}` : "The summary is in svc's comment above.";
      return { key, find, post: post(stampBody(pointer, stamp, key)) };
    },
  };
}

function reviewIdsOf(comments: readonly ReviewComment[], threads: readonly { reviewId: number | null }[]) {
  const ids = new Set<string>();
  for (const comment of comments)
    if (comment.pull_request_review_id !== null) ids.add(String(comment.pull_request_review_id));
  for (const thread of threads) if (thread.reviewId !== null) ids.add(String(thread.reviewId));
  return [...ids];
}
