import { ownReviewIds } from "../../db/output-deliveries.ts";
import type { Pipeline } from "../../shared/config/types.ts";
import { readReply } from "../event/reply.ts";
import type { ResolvedEvent } from "../event/resolve.ts";
import { PublishError } from "../outputs/attempt.ts";
import { CodehostPublisher } from "../outputs/codehost.ts";
import { codehostPublisher, pullRef } from "../outputs/publish.ts";
import type { PublishDeps } from "../outputs/publish-deps.ts";

/**
 * The review thread a reply is in, as the agent answering it is given: svc's finding (the thread's
 * first comment) with its path and lines, then the replies in the order they were posted, the one
 * that fired the run among them.
 */
export interface ReplyThread {
  path: string;
  /** the finding's last line on the pull request's head; null once its lines changed (outdated) */
  line: number | null;
  startLine: number | null;
  /** the line it was written on, which an outdated finding still names */
  originalLine: number | null;
  /** the lines the thread is on, as GitHub's `diff_hunk` shows them */
  diffHunk: string;
  finding: { id: number; body: string };
  replies: { id: number; login: string | null; body: string }[];
  /** the reply this run answers */
  answering: number;
}

/**
 * The thread of a run that answers a reply (a pipeline with `{ replies: true }`, worker/event/reply.ts).
 * The thread must be svc's own: its first comment, read from GitHub (never from the payload), belongs
 * to a review svc delivered itself (db/output-deliveries.ts ownReviewIds). `foreign` otherwise,
 * and when GitHub no longer has that comment: svc does not answer in threads it did not open.
 * Undefined when the run answers no reply.
 */
export async function replyThread(
  deps: PublishDeps,
  pipeline: Pipeline,
  event: ResolvedEvent,
): Promise<ReplyThread | "foreign" | undefined> {
  const reply = readReply(event.eventName, event.payload);
  if (!reply || !pipeline.trigger?.codehost.some((matcher) => matcher.replies)) return undefined;
  try {
    const codehost = await codehostPublisher(deps, pipeline, event.context.repo);
    // readReply knows GitHub's review threads only; a GitLab identity has none of them to show
    if (!(codehost instanceof CodehostPublisher)) return "foreign";
    const ref = pullRef(event);
    const root = await codehost.readReviewComment(ref, reply.inReplyTo);
    // GitHub names a thread's first comment in every reply's in_reply_to_id: a reply there opens no thread
    if (!root || root.in_reply_to_id || root.pull_request_review_id === null) return "foreign";
    const own = await ownReviewIds(deps.pool, [String(root.pull_request_review_id)]);
    if (own.size === 0) return "foreign";
    const listed = (await codehost.listReviewComments(ref))
      .filter((comment) => comment.in_reply_to_id === Number(root.id))
      .map((comment) => ({ id: Number(comment.id), login: comment.user?.login ?? null, body: comment.body }));
    // the reply that fired the run stands in the thread even if GitHub's list does not show it yet
    const replies = listed.some((entry) => entry.id === reply.commentId)
      ? listed
      : [...listed, { id: reply.commentId, login: reply.login, body: reply.body }];
    return {
      path: root.path,
      line: root.line ?? null,
      startLine: root.start_line ?? null,
      originalLine: root.original_line ?? null,
      diffHunk: root.diff_hunk ?? reply.diffHunk,
      finding: { id: Number(root.id), body: root.body },
      replies: replies.sort((a, b) => a.id - b.id),
      answering: reply.commentId,
    };
  } catch (error) {
    if (!(error instanceof PublishError)) throw error;
    throw new Error(
      `the review thread of comment ${reply.inReplyTo} could not be read from the code host: ${error.failure.status} ${error.failure.message}`,
    );
  }
}
