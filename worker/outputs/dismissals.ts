import { dismissalsOf, judgedThreads, recordDismissal } from "../../db/notes.ts";
import { associationOfPermission } from "../../shared/codehost/github-reads.ts";
import type { CodehostPublisher, PullRef, ReviewComment } from "./codehost.ts";
import { type Dismissed, fingerprintsIn, ruleKey, ruleOf } from "./findings.ts";
import type { PublishDeps } from "./publish-deps.ts";
import type { ReviewThread } from "./review-threads.ts";

/**
 * Dismissed findings. A finding of svc's own review is dismissed when a member resolved its thread
 * while its lines did not change (not outdated: resolving after a fix is no dismissal), or answered
 * it "won't fix" / "false positive". Each such thread becomes a note of kind `dismissal` for the
 * repository, once (db/notes.ts recordDismissal), and later reviews drop the findings matching one:
 * the same fingerprint, or the same rule (first line) on the same path. A pull request's author
 * outside the team resolving svc's threads silences nothing: only a member's act counts, judged by
 * the repository permission GitHub states (write or admin), never by a comment's text.
 */
const DISMISSING_WORDS = /\b(won['’]?t fix|wontfix|false positive)\b/i;
const MEMBER_ASSOCIATIONS = new Set(["OWNER", "MEMBER", "COLLABORATOR"]);

type Listed = ReviewComment & { author_association?: string; user?: { login?: string } | null };

interface Found {
  thread: string;
  root: Listed;
  why: string;
}

/**
 * Records the dismissals svc's own threads on this pull request show, then returns every dismissal
 * of the repository, for planReview to drop. `resolved`: comment ids of svc's resolved threads.
 */
export async function dismissedFindings(
  deps: PublishDeps,
  codehost: CodehostPublisher,
  ref: PullRef,
  seen: { threads: readonly ReviewThread[]; comments: readonly ReviewComment[]; own: ReadonlySet<string> },
): Promise<Dismissed> {
  const repo = `${ref.owner}/${ref.repo}`;
  const byId = new Map(seen.comments.map((comment) => [String(comment.id), comment as Listed]));
  const candidates = seen.threads.filter(
    (thread) =>
      thread.commentId !== null && thread.reviewId !== null && seen.own.has(String(thread.reviewId)),
  );
  const judged = await judgedThreads(
    deps.pool,
    candidates.map((thread) => thread.id),
  );
  const members = new Map<string, Promise<boolean>>();
  const isMember = (login: string) => {
    if (!members.has(login)) members.set(login, memberOf(deps, codehost, ref, login));
    return members.get(login)!;
  };
  for (const thread of candidates) {
    if (judged.has(thread.id)) continue;
    const root = byId.get(String(thread.commentId));
    if (!root || root.in_reply_to_id) continue;
    const found = await dismissalIn(thread, root, seen.comments as Listed[], isMember);
    if (!found) continue;
    const recorded = await recordDismissal(deps.pool, {
      repo,
      path: root.path,
      fingerprint: fingerprintsIn(root.body)[0] ?? null,
      rule: ruleOf(root.body),
      thread: thread.id,
      why: found.why,
      pipeline: null,
      invocationId: null,
    });
    if (recorded)
      deps.logger.info("a finding was dismissed: later reviews drop it", {
        event: "output.finding_dismissed",
        repo,
        path: root.path,
        note: recorded.id,
        why: found.why,
      });
  }
  const dismissals = await dismissalsOf(deps.pool, repo);
  return {
    fingerprints: new Set(dismissals.flatMap((entry) => (entry.fingerprint ? [entry.fingerprint] : []))),
    rules: new Set(dismissals.map((entry) => ruleKey(entry.path, entry.rule))),
  };
}

async function dismissalIn(
  thread: ReviewThread,
  root: Listed,
  comments: readonly Listed[],
  isMember: (login: string) => Promise<boolean>,
): Promise<Found | undefined> {
  if (thread.isResolved && !thread.isOutdated && thread.resolvedBy && (await isMember(thread.resolvedBy)))
    return { thread: thread.id, root, why: `resolved without a change by @${thread.resolvedBy}` };
  for (const reply of comments) {
    if (String(reply.in_reply_to_id ?? "") !== String(root.id)) continue;
    const words = DISMISSING_WORDS.exec(reply.body ?? "");
    if (!words || !MEMBER_ASSOCIATIONS.has(String(reply.author_association ?? "").toUpperCase())) continue;
    return { thread: thread.id, root, why: `answered "${words[1]}" by @${reply.user?.login ?? "a member"}` };
  }
  return undefined;
}

/** Whether GitHub gives `login` write or admin on the repository; an answer it cannot give is no. */
async function memberOf(
  deps: PublishDeps,
  codehost: CodehostPublisher,
  ref: PullRef,
  login: string,
): Promise<boolean> {
  try {
    const { data } = await codehost.client.request(
      "GET /repos/{owner}/{repo}/collaborators/{username}/permission",
      { owner: ref.owner, repo: ref.repo, username: login },
    );
    const association = associationOfPermission(String((data as { permission?: unknown }).permission));
    return association === "owner" || association === "member";
  } catch (error) {
    // not a collaborator (404), or GitHub could not say: the resolve dismisses nothing (fail closed)
    const status = (error as { status?: unknown }).status;
    if (status !== 404)
      deps.logger.warn("could not read a resolver's permission: the resolve dismisses nothing", {
        event: "output.dismissal_unjudged",
        login,
        status: typeof status === "number" ? status : undefined,
      });
    return false;
  }
}
