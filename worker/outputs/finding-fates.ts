import {
  dismissedThreadReasons,
  type FoundFinding,
  recordFindings,
  type ThreadFate,
  updateFates,
} from "../../db/review-findings.ts";
import type { PullRef, ReviewComment } from "./codehost.ts";
import type { InlineComment } from "./diff-lines.ts";
import { fingerprintsIn, ruleOf } from "./findings.ts";
import type { PublishDeps } from "./publish-deps.ts";
import type { ReviewThread } from "./review-threads.ts";

/**
 * Findings and their fate (issue 57, "judged by what people did"). Each inline finding a live
 * review posts is recorded with the review it went out in, each one a shadow run would have posted
 * with its run; at the next review of the pull request, svc's threads (read for dismissals anyway)
 * say what became of the live ones: resolved after their lines changed, dismissed, or thumbed down.
 * A record that cannot be written costs the signal, never the review: errors are logged, not thrown.
 */

/** A dismissal whose reason names a thumbs-down (a 👎 reaction) counts as thumbed down. */
const THUMBED = /👎|thumb(?:s|ed)?[ -]?down|\+?-1 reaction/i;

/** The fate a judged dismissal gives its finding, by its note's reason (db/notes.ts recordDismissal). */
export function fateOfDismissal(reason: string | null): "dismissed" | "thumbed_down" {
  return reason && THUMBED.test(reason) ? "thumbed_down" : "dismissed";
}

/** The findings of a review's inline comments, as fingerprinted by findings.ts's dropRepeated. */
export function findingsOf(comments: readonly InlineComment[]): FoundFinding[] {
  return comments.map((comment) => ({
    path: comment.path,
    startLine: comment.start_line ?? comment.line,
    endLine: comment.line,
    fingerprint: fingerprintsIn(comment.body)[0] ?? null,
    rule: ruleOf(comment.body),
  }));
}

/**
 * Records a review's findings for the run: a posted one with its review's id, a held one (no
 * review) only when the run is a shadow run.
 */
export async function recordReviewFindings(
  deps: PublishDeps,
  run: { invocationId: string; ref: PullRef; key: string; reviewId: string | null },
  comments: readonly InlineComment[],
): Promise<void> {
  try {
    await recordFindings(
      deps.pool,
      {
        invocationId: run.invocationId,
        repo: `${run.ref.owner}/${run.ref.repo}`,
        pull: run.ref.number,
        key: run.key,
        reviewId: run.reviewId,
        shadowOnly: run.reviewId === null,
      },
      findingsOf(comments),
    );
  } catch (error) {
    deps.logger.warn("could not record the review's findings: their fate will not be judged", {
      event: "output.findings_unrecorded",
      invocation: run.invocationId,
      message: error instanceof Error ? error.message : String(error),
    });
  }
}

/**
 * Reads the fate of svc's live findings on this pull request from its threads, after dismissals.ts
 * judged them: a thread judged a dismissal → dismissed (or thumbed_down, by its reason); one
 * resolved while outdated (its lines changed since the finding) → resolved_with_change.
 */
export async function judgeFates(
  deps: PublishDeps,
  ref: PullRef,
  seen: { threads: readonly ReviewThread[]; comments: readonly ReviewComment[]; own: ReadonlySet<string> },
): Promise<void> {
  const mine = seen.threads.filter(
    (thread) =>
      thread.commentId !== null && thread.reviewId !== null && seen.own.has(String(thread.reviewId)),
  );
  if (mine.length === 0) return;
  try {
    const byId = new Map(seen.comments.map((comment) => [String(comment.id), comment]));
    const dismissed = await dismissedThreadReasons(
      deps.pool,
      mine.map((thread) => thread.id),
    );
    const fates: ThreadFate[] = [];
    for (const thread of mine) {
      const root = byId.get(String(thread.commentId));
      const fingerprint = root && !root.in_reply_to_id ? fingerprintsIn(root.body)[0] : undefined;
      if (!fingerprint) continue;
      const base = {
        repo: `${ref.owner}/${ref.repo}`,
        pull: ref.number,
        fingerprint,
        reviewId: String(thread.reviewId),
        commentId: String(thread.commentId),
      };
      if (dismissed.has(thread.id)) {
        const reason = dismissed.get(thread.id) ?? null;
        fates.push({ ...base, fate: fateOfDismissal(reason), reason });
      } else if (thread.isResolved && thread.isOutdated) {
        // svc resolves its own outdated threads (resolve_outdated): the lines changed all the same
        const by = thread.resolvedBy ? `@${thread.resolvedBy}` : "someone";
        fates.push({
          ...base,
          fate: "resolved_with_change",
          reason: `resolved by ${by} after its lines changed`,
        });
      } else fates.push({ ...base, fate: null, reason: null });
    }
    const changed = await updateFates(deps.pool, fates);
    if (changed > 0)
      deps.logger.info("findings of svc's reviews took their fate", {
        event: "output.finding_fates",
        repo: `${ref.owner}/${ref.repo}`,
        number: ref.number,
        changed,
      });
  } catch (error) {
    deps.logger.warn("could not record the fate of svc's findings on the pull request", {
      event: "output.fates_unrecorded",
      repo: `${ref.owner}/${ref.repo}`,
      number: ref.number,
      message: error instanceof Error ? error.message : String(error),
    });
  }
}
