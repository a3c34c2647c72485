import { ownReviewIds } from "../../db/output-deliveries.ts";
import type { OutputBinding, Pipeline } from "../../shared/config/types.ts";
import type { ReviewResult } from "../../shared/output-schemas.ts";
import { isIgnored, type PathRule } from "../../shared/review/path-rules.ts";
import type { ResolvedEvent } from "../event/resolve.ts";
import { PublishError } from "./attempt.ts";
import type { CodehostPublisher, PullRef, ReviewComment } from "./codehost.ts";
import type { DeliveryWork, Remote } from "./delivery.ts";
import { bodyWithMoved, diffMap, type InlineComment, placeComments } from "./diff-lines.ts";
import { dismissedFindings } from "./dismissals.ts";
import { judgeFates, recordReviewFindings } from "./finding-fates.ts";
import { bodyWithRepeated, dropRepeated, NONE_DISMISSED, standingFingerprints } from "./findings.ts";
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
  const listed = await ownReviewIds(deps.pool, reviewIdsOf(existing, []));
  // svc's threads say which of its findings a member dismissed (dismissals.ts)
  const mine = inline.length > 0 && existing.some((c) => listed.has(String(c.pull_request_review_id)));
  const threads = binding.resolveOutdated
    ? await reviewThreads(codehost, ref)
    : mine
      ? await optionalThreads(deps, codehost, ref)
      : [];
  const own = threads.length ? await ownReviewIds(deps.pool, reviewIdsOf(existing, threads)) : listed;
  const dismissed = inline.length
    ? await dismissedFindings(deps, codehost, ref, { threads, comments: existing, own })
    : NONE_DISMISSED;
  // what people did with svc's earlier findings here, for `svc eval compare --shadow`
  if (threads.length) await judgeFates(deps, ref, { threads, comments: existing, own });
  const resolved = new Set(
    threads.flatMap((t) => (t.isResolved && t.commentId ? [String(t.commentId)] : [])),
  );
  const standing = standingFingerprints(existing, own, resolved);
  const { fresh, repeated, dismissed: dropped } = dropRepeated(files, inline, standing, dismissed);
  const text = bodyWithRepeated(bodyWithMoved(review.body, moved), repeated, dropped);
  return { text, fresh, threads, own };
}

/** Threads read for dismissals only: GraphQL refusing them costs the dismissals, never the review. */
async function optionalThreads(deps: PublishDeps, codehost: CodehostPublisher, ref: PullRef) {
  return reviewThreads(codehost, ref).catch((error: unknown) => {
    if (!(error instanceof PublishError)) throw error;
    deps.logger.warn("could not read svc's review threads: dismissals on them are not judged", {
      event: "output.threads_unread",
      status: error.failure.status,
      message: error.failure.message,
    });
    return [];
  });
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
  // the findings are recorded with the review they went out in, posted now or adopted after a lost answer
  const recorded = async (remote: Remote) => {
    await recordReviewFindings(
      deps,
      { invocationId: stamp.invocation, ref, key, reviewId: remote.id },
      fresh,
    );
    return remote;
  };
  const post = (body: string) => () =>
    codehost
      .postReview(ref, { commitId: event.context.sha, event: review.event, body, comments: fresh })
      .then(recorded);
  const find = async () => {
    const found = await codehost.findReview(ref, stamp, key);
    return found && recorded(found);
  };
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

/**
 * The result with the findings on ignored paths (`ignore: true` rules of `review.paths` and of the
 * base's `.svc/review.yaml`) left out of each `codehost.review` it holds, and counted in its body.
 * Applied before publishing, so GitHub, GitLab and held outputs all publish the same review.
 */
export function withoutIgnored(
  pipeline: Pick<Pipeline, "outputs">,
  result: unknown,
  rules: readonly PathRule[],
): unknown {
  if (rules.length === 0) return result;
  return mapReviews(pipeline, result, (review) => {
    const comments = review.comments ?? [];
    // "./x" is the model's spelling of the repository path "x": matched as that path
    const kept = comments.filter((comment) => !isIgnored(rules, comment.path.replace(/^(\.\/)+/, "")));
    const dropped = comments.length - kept.length;
    if (dropped === 0) return review;
    return { ...review, comments: kept, body: bodyWithDropped(review.body, dropped) };
  });
}

export function bodyWithDropped(body: string, dropped: number): string {
  const line = `${dropped} ${dropped === 1 ? "finding" : "findings"} on ignored paths dropped`;
  const head = body.trimEnd();
  return `${head}${head ? "\n\n" : ""}${line}`;
}

/** The first line of a result published after its agent was stopped at a limit (worker/run/partial.ts). */
export function incompleteLine(limit: "turn" | "time"): string {
  return `⚠️ **incomplete: stopped at its ${limit} limit** - what the review found before it was stopped`;
}

/** Each review and comment body of the result opens with the incomplete line. */
export function markedIncomplete(
  pipeline: Pick<Pipeline, "outputs">,
  result: unknown,
  limit: "turn" | "time",
): unknown {
  const mark = (body: string) => `${incompleteLine(limit)}\n\n${body}`;
  const marked = mapReviews(pipeline, result, (review) => ({ ...review, body: mark(review.body) })) as Record<
    string,
    unknown
  >;
  for (const [key, binding] of Object.entries(pipeline.outputs)) {
    const comment = marked[key] as { body?: unknown } | undefined;
    if (binding.handler === "codehost.comment" && typeof comment?.body === "string")
      marked[key] = { ...comment, body: mark(comment.body) };
  }
  return marked;
}

function mapReviews(
  pipeline: Pick<Pipeline, "outputs">,
  result: unknown,
  change: (review: ReviewResult) => ReviewResult,
): unknown {
  if (result === null || typeof result !== "object" || Array.isArray(result)) return result;
  const out = { ...(result as Record<string, unknown>) };
  for (const [key, binding] of Object.entries(pipeline.outputs)) {
    const review = out[key] as ReviewResult | undefined;
    if (binding.handler === "codehost.review" && review && typeof review.body === "string")
      out[key] = change(review);
  }
  return out;
}
