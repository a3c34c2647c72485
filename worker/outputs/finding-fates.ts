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
 * One of svc's live findings as its host shows it now, whatever the host: the thread it opened
 * (the id dismissals.ts / gitlab-dismissals.ts judge it by), the review and comment it went out in,
 * its fingerprint, whether it is resolved (and by whom) and whether its lines changed since.
 */
export interface OwnFinding {
  thread: string;
  reviewId: string;
  commentId: string;
  fingerprint: string;
  resolved: boolean;
  changed: boolean;
  resolvedBy: string | null;
}

/**
 * Reads the fate of svc's live findings on this pull request from its GitHub threads, after
 * dismissals.ts judged them (judgeFindingFates says how).
 */
export async function judgeFates(
  deps: PublishDeps,
  ref: PullRef,
  seen: { threads: readonly ReviewThread[]; comments: readonly ReviewComment[]; own: ReadonlySet<string> },
): Promise<void> {
  const byId = new Map(seen.comments.map((comment) => [String(comment.id), comment]));
  const mine: OwnFinding[] = [];
  for (const thread of seen.threads) {
    if (thread.commentId === null || thread.reviewId === null || !seen.own.has(String(thread.reviewId)))
      continue;
    const root = byId.get(String(thread.commentId));
    const fingerprint = root && !root.in_reply_to_id ? fingerprintsIn(root.body)[0] : undefined;
    if (!fingerprint) continue;
    mine.push({
      thread: thread.id,
      reviewId: String(thread.reviewId),
      commentId: String(thread.commentId),
      fingerprint,
      resolved: thread.isResolved,
      changed: thread.isOutdated,
      resolvedBy: thread.resolvedBy,
    });
  }
  await judgeFindingFates(deps, ref, mine);
}

/**
 * The fate of svc's live findings, on any host, after its dismissals were judged: a thread judged
 * a dismissal → dismissed (or thumbed_down, by its reason); one resolved after its lines changed →
 * resolved_with_change; otherwise still open (the finding learns its comment id).
 */
export async function judgeFindingFates(
  deps: PublishDeps,
  ref: PullRef,
  mine: readonly OwnFinding[],
): Promise<void> {
  if (mine.length === 0) return;
  try {
    const dismissed = await dismissedThreadReasons(
      deps.pool,
      mine.map((finding) => finding.thread),
    );
    const fates: ThreadFate[] = [];
    for (const finding of mine) {
      const base = {
        repo: `${ref.owner}/${ref.repo}`,
        pull: ref.number,
        fingerprint: finding.fingerprint,
        reviewId: finding.reviewId,
        commentId: finding.commentId,
      };
      if (dismissed.has(finding.thread)) {
        const reason = dismissed.get(finding.thread) ?? null;
        fates.push({ ...base, fate: fateOfDismissal(reason), reason });
      } else if (finding.resolved && finding.changed) {
        // svc resolves its own outdated threads (resolve_outdated): the lines changed all the same
        const by = finding.resolvedBy ? `@${finding.resolvedBy}` : "someone";
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
