import { associationOfAccess } from "../../shared/codehost/gitlab.ts";
import { PublishError } from "./attempt.ts";
import type { PullRef } from "./codehost.ts";
import {
  type DismissalCandidate,
  dismissingWords,
  memberCache,
  recordDismissals,
} from "./dismissal-notes.ts";
import type { Dismissed } from "./findings.ts";
import { findingOf, standingPrint } from "./gitlab-findings.ts";
import type { GitlabDiscussion, GitlabNote, GitlabPublisher } from "./gitlab-publisher.ts";
import type { PublishDeps } from "./publish-deps.ts";

/**
 * Dismissed findings on GitLab. A finding of svc's own discussion (its first note written by svc's
 * user, positioned, carrying a fingerprint) is dismissed when a member resolved the discussion while
 * the finding still applies to the current diff (its fingerprint recomputed on today's diff at its
 * position matches: gitlab-findings.ts; a resolve after its lines changed is a fix, not a
 * dismissal), replied "won't fix" / "false positive", or gave its note a `thumbsdown` award emoji.
 * A member is who GitLab's members API gives Developer (30) or above on the project, inherited
 * memberships included, as the author gates judge (worker/queue/gitlab-author.ts); svc's own user
 * counts for nothing (it resolves outdated discussions itself). Award emoji are read last and only
 * for svc's own discussions not judged before: one request per such discussion and review.
 */
const THUMBS_DOWN = "thumbsdown";

export async function gitlabDismissed(
  deps: PublishDeps,
  gitlab: GitlabPublisher,
  ref: PullRef,
  seen: {
    discussions: readonly GitlabDiscussion[];
    self: number;
    patches: ReadonlyMap<string, string | undefined>;
  },
): Promise<Dismissed> {
  const isMember = memberCache((userId: number) => memberOf(deps, gitlab, ref, userId));
  const candidates: DismissalCandidate[] = [];
  for (const discussion of seen.discussions) {
    const first = discussion.notes[0];
    if (!first || first.author.id !== seen.self) continue;
    const finding = findingOf(discussion);
    if (!finding) continue;
    candidates.push({
      // GitLab's discussion ids are hex digests; the prefix keeps them apart from GitHub's threads
      thread: `gitlab:${discussion.id}`,
      path: finding.path,
      body: finding.body,
      judge: async () => {
        const by = first.resolved ? first.resolved_by : null;
        if (
          by &&
          by.id !== seen.self &&
          standingPrint(discussion, finding, seen.patches) &&
          (await isMember(by.id))
        )
          return `resolved without a change by @${nameOf(by)}`;
        for (const reply of discussion.notes.slice(1)) {
          const words =
            reply.system || reply.author.id === seen.self ? undefined : dismissingWords(reply.body);
          if (words && (await isMember(reply.author.id)))
            return `answered "${words}" by @${nameOf(reply.author)}`;
        }
        for (const user of await thumbsDown(deps, gitlab, ref, first))
          if (user.id !== seen.self && (await isMember(user.id))) return `thumbed down by @${nameOf(user)}`;
        return undefined;
      },
    });
  }
  return recordDismissals(deps, gitlab.project(ref), candidates);
}

const nameOf = (user: { id: number; username?: string }) => user.username ?? String(user.id);

/**
 * Who gave svc's note a `thumbsdown`. A note gone (404) has none; a read GitLab refuses judges
 * nothing now, and the discussion is judged again on the next review.
 */
async function thumbsDown(
  deps: PublishDeps,
  gitlab: GitlabPublisher,
  ref: PullRef,
  note: GitlabNote,
): Promise<{ id: number; username?: string }[]> {
  try {
    const awards = await gitlab.noteAwards(ref, note.id);
    return awards.filter((award) => award.name === THUMBS_DOWN).map((award) => award.user);
  } catch (error) {
    if (!(error instanceof PublishError)) throw error;
    if (error.failure.status !== "404")
      deps.logger.warn("could not read the award emoji on svc's note: a thumbsdown on it is not judged", {
        event: "output.dismissal_unjudged",
        note: note.id,
        status: error.failure.status,
        message: error.failure.message,
      });
    return [];
  }
}

/** Whether GitLab gives the user Developer or above on the project; an answer it cannot give is no. */
async function memberOf(deps: PublishDeps, gitlab: GitlabPublisher, ref: PullRef, userId: number) {
  try {
    const association = associationOfAccess(await gitlab.accessLevel(ref, userId));
    return association === "owner" || association === "member";
  } catch (error) {
    if (!(error instanceof PublishError)) throw error;
    deps.logger.warn("could not read a member's access level: their act dismisses nothing", {
      event: "output.dismissal_unjudged",
      user: userId,
      status: error.failure.status,
      message: error.failure.message,
    });
    return false;
  }
}
