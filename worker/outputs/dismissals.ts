import { associationOfPermission } from "../../shared/codehost/github-reads.ts";
import type { CodehostPublisher, PullRef, ReviewComment } from "./codehost.ts";
import {
  type DismissalCandidate,
  dismissingWords,
  memberCache,
  recordDismissals,
} from "./dismissal-notes.ts";
import type { Dismissed } from "./findings.ts";
import type { PublishDeps } from "./publish-deps.ts";
import type { ReviewThread } from "./review-threads.ts";

/**
 * Dismissed findings on GitHub. A finding of svc's own review is dismissed when a member resolved
 * its thread while its lines did not change (not outdated: resolving after a fix is no dismissal),
 * answered it "won't fix" / "false positive", or gave its comment (the thread's first) a 👎
 * reaction. Each such thread becomes a note of kind `dismissal` once (dismissal-notes.ts). A pull
 * request's author outside the team silences nothing: only a member's act counts, judged by the
 * repository permission GitHub states (write or admin; a reply by its `author_association`), never
 * by a comment's text. Reactions are read last and only for svc's own threads not judged before:
 * one request per such thread and review.
 */
const MEMBER_ASSOCIATIONS = new Set(["OWNER", "MEMBER", "COLLABORATOR"]);
const REACTIONS_PAGE = 100;
const MAX_REACTION_PAGES = 5;

type Listed = ReviewComment & { author_association?: string; user?: { login?: string } | null };

/**
 * Records the dismissals svc's own threads on this pull request show, then returns every dismissal
 * of the repository, for planReview to drop.
 */
export async function dismissedFindings(
  deps: PublishDeps,
  codehost: CodehostPublisher,
  ref: PullRef,
  seen: { threads: readonly ReviewThread[]; comments: readonly ReviewComment[]; own: ReadonlySet<string> },
): Promise<Dismissed> {
  const byId = new Map(seen.comments.map((comment) => [String(comment.id), comment as Listed]));
  const isMember = memberCache((login: string) => memberOf(deps, codehost, ref, login));
  const candidates: DismissalCandidate[] = [];
  for (const thread of seen.threads) {
    if (thread.commentId === null || thread.reviewId === null || !seen.own.has(String(thread.reviewId)))
      continue;
    const root = byId.get(String(thread.commentId));
    if (!root || root.in_reply_to_id) continue;
    candidates.push({
      thread: thread.id,
      path: root.path,
      body: root.body,
      judge: () => dismissalIn(deps, codehost, ref, { thread, root, comments: seen.comments, isMember }),
    });
  }
  return recordDismissals(deps, `${ref.owner}/${ref.repo}`, candidates);
}

async function dismissalIn(
  deps: PublishDeps,
  codehost: CodehostPublisher,
  ref: PullRef,
  seen: {
    thread: ReviewThread;
    root: Listed;
    comments: readonly Listed[];
    isMember: (login: string) => Promise<boolean>;
  },
): Promise<string | undefined> {
  const { thread, root, isMember } = seen;
  if (thread.isResolved && !thread.isOutdated && thread.resolvedBy && (await isMember(thread.resolvedBy)))
    return `resolved without a change by @${thread.resolvedBy}`;
  for (const reply of seen.comments) {
    if (String(reply.in_reply_to_id ?? "") !== String(root.id)) continue;
    const words = dismissingWords(reply.body);
    if (!words || !MEMBER_ASSOCIATIONS.has(String(reply.author_association ?? "").toUpperCase())) continue;
    return `answered "${words}" by @${reply.user?.login ?? "a member"}`;
  }
  for (const login of await thumbsDown(deps, codehost, ref, Number(root.id)))
    if (await isMember(login)) return `thumbed down by @${login}`;
  return undefined;
}

/**
 * Who gave svc's comment a 👎 (`GET …/pulls/comments/{id}/reactions?content=-1`). A comment gone
 * (404) has none; a read GitHub refuses judges nothing now, and the thread is judged again on the
 * next review.
 */
async function thumbsDown(
  deps: PublishDeps,
  codehost: CodehostPublisher,
  ref: PullRef,
  commentId: number,
): Promise<string[]> {
  const logins: string[] = [];
  try {
    for (let page = 1; page <= MAX_REACTION_PAGES; page += 1) {
      const { data } = await codehost.client.request(
        "GET /repos/{owner}/{repo}/pulls/comments/{comment_id}/reactions",
        {
          owner: ref.owner,
          repo: ref.repo,
          comment_id: commentId,
          content: "-1",
          per_page: REACTIONS_PAGE,
          page,
        },
      );
      for (const reaction of data)
        if (reaction.content === "-1" && reaction.user?.login) logins.push(reaction.user.login);
      if (data.length < REACTIONS_PAGE) break;
    }
  } catch (error) {
    const status = (error as { status?: unknown }).status;
    if (status !== 404)
      deps.logger.warn("could not read the reactions on svc's review comment: a 👎 on it is not judged", {
        event: "output.dismissal_unjudged",
        comment: commentId,
        status: typeof status === "number" ? status : undefined,
      });
  }
  return logins;
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
    // not a collaborator (404), or GitHub could not say: the act dismisses nothing (fail closed)
    const status = (error as { status?: unknown }).status;
    if (status !== 404)
      deps.logger.warn("could not read a member's permission: their act dismisses nothing", {
        event: "output.dismissal_unjudged",
        login,
        status: typeof status === "number" ? status : undefined,
      });
    return false;
  }
}
