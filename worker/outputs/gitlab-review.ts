import type { OutputBinding } from "../../shared/config/types.ts";
import type { ReviewResult } from "../../shared/output-schemas.ts";
import type { ResolvedEvent } from "../event/resolve.ts";
import { PublishError } from "./attempt.ts";
import type { PullRef } from "./codehost.ts";
import type { Remote } from "./delivery.ts";
import { bodyWithMoved, diffMap, type InlineComment, placeComments } from "./diff-lines.ts";
import { judgeFindingFates, recordReviewFindings } from "./finding-fates.ts";
import { bodyWithRepeated, dropRepeated, fingerprintsIn, NONE_DISMISSED } from "./findings.ts";
import { gitlabDismissed } from "./gitlab-dismissals.ts";
import { fatesSeen, findingOf, standingPrint } from "./gitlab-findings.ts";
import type { GitlabDiscussion, GitlabPublisher, NotePosition } from "./gitlab-publisher.ts";
import type { PublishDeps } from "./publish-deps.ts";
import { marker, type Stamp, stampBody } from "./render.ts";
import type { Work } from "./review.ts";
import { stickyBody, writeSticky } from "./sticky.ts";

/**
 * What a review on a GitLab merge request would post, read from GitLab without writing to it: the
 * findings that land in the diff and are not standing or dismissed (`fresh`), and the body with the
 * others moved into it and counted; like planReview for GitHub, a held run records exactly this.
 * Reading svc's discussions also judges what people did with its earlier findings (their fates).
 */
export interface GitlabReviewPlan {
  text: string;
  fresh: InlineComment[];
  moved: InlineComment[];
  repeated: number;
  dropped: number;
  files: { filename: string; previous?: string; patch?: string }[];
  patches: ReadonlyMap<string, string | undefined>;
  /** svc's open discussions whose finding no longer applies, for `resolve_outdated` */
  outdated: GitlabDiscussion[];
}

export async function planGitlabReview(
  deps: PublishDeps,
  gitlab: GitlabPublisher,
  ref: PullRef,
  binding: OutputBinding,
  review: ReviewResult,
): Promise<GitlabReviewPlan> {
  const comments = review.comments ?? [];
  const needFiles = comments.length > 0 || binding.resolveOutdated === true;
  const files = needFiles ? await gitlab.listFiles(ref) : [];
  const { inline, moved } = placeComments(diffMap(files), comments);
  const discussions = needFiles ? await gitlab.discussions(ref) : [];
  const me = needFiles ? await gitlab.self() : undefined;
  const patches = new Map(files.map((file) => [file.filename, file.patch]));
  const { standing, outdated } = ownFindings(discussions, me?.id, patches);
  // svc's discussions say which of its findings a member dismissed (gitlab-dismissals.ts)
  const dismissed =
    inline.length > 0 && me
      ? await gitlabDismissed(deps, gitlab, ref, { discussions, self: me.id, patches })
      : NONE_DISMISSED;
  // what people did with svc's earlier findings here, for `svc eval compare --shadow`
  if (me) await judgeFindingFates(deps, ref, fatesSeen(discussions, me.id, patches));
  const { fresh, repeated, dismissed: dropped } = dropRepeated(files, inline, standing, dismissed);
  const text = bodyWithRepeated(bodyWithMoved(review.body, moved), repeated, dropped);
  return { text, fresh, moved, repeated, dropped, files, patches, outdated };
}

/**
 * A review on a GitLab merge request: GitLab has no review object, so the findings are one
 * discussion each, positioned on the merge request's `diff_refs`, then the verdict (an approval
 * where the token may give one), then one summary note (the sticky note with `sticky`). A finding
 * outside the diff, or one whose position GitLab refuses (400), is folded into the summary: a
 * review is never lost to one line. Fingerprints, `resolve_outdated` and dismissed findings
 * (gitlab-dismissals.ts) work on svc's own discussions (their first note's author is svc's user).
 * Each finding opened is recorded with its discussion as its review (finding-fates.ts).
 */
export async function gitlabReviewWork(
  deps: PublishDeps,
  gitlab: GitlabPublisher,
  run: { event: ResolvedEvent; ref: PullRef; stamp: Stamp; key: string; binding: OutputBinding },
  review: ReviewResult,
): Promise<Work[]> {
  const { ref, stamp, key, binding } = run;
  const { fresh, moved, repeated, dropped, files, patches, outdated } = await planGitlabReview(
    deps,
    gitlab,
    ref,
    binding,
    review,
  );
  if (binding.resolveOutdated) await resolveAll(deps, gitlab, ref, key, outdated);
  const refused: InlineComment[] = [];
  let verdict = "";
  const works: Work[] = [];
  if (fresh.length > 0) {
    const request = await gitlab.mergeRequest(ref);
    const previous = new Map(files.map((file) => [file.filename, file.previous ?? file.filename]));
    works.push({
      key: `${key}.findings`,
      handler: "codehost.review",
      // post itself skips what an earlier attempt of this run already opened
      find: async () => undefined,
      post: () => postFindings(deps, gitlab, ref, { stamp, key, fresh, refused, previous, patches, request }),
    });
  }
  if (review.event === "APPROVE") {
    works.push({
      key: `${key}.approval`,
      handler: "codehost.review",
      find: async () => undefined,
      post: async () => {
        try {
          await gitlab.approve(ref, run.event.context.sha);
        } catch (error) {
          // the token may not approve (its user wrote the merge request, or lacks the right): the
          // summary carries the verdict instead, which is not a failed review
          if (!(error instanceof PublishError) || !["401", "403", "409"].includes(error.failure.status))
            throw error;
          verdict = `Verdict: approve (svc's GitLab user may not approve this merge request: ${error.failure.message})`;
        }
        return { id: `approval:${ref.number}`, url: null };
      },
    });
  }
  const text = () => {
    const body = bodyWithRepeated(bodyWithMoved(review.body, [...moved, ...refused]), repeated, dropped);
    const said = review.event === "REQUEST_CHANGES" ? "Verdict: changes requested" : verdict;
    return said ? `${body.trimEnd()}\n\n${said}` : body;
  };
  if (binding.sticky) {
    const sha = run.event.context.sha || null;
    const write = { pipeline: stamp.pipeline, ref, key, invocation: stamp.invocation, seal: stamp.seal, sha };
    works.push({
      key: `${key}.summary`,
      handler: "codehost.comment",
      find: async () => undefined,
      post: () => writeSticky(deps.pool, gitlab, write, stickyBody(text(), stamp, key), "result"),
    });
  } else {
    works.push({
      key,
      find: () => gitlab.findComment(ref, stamp, key),
      post: () => gitlab.postComment(ref, stampBody(text(), stamp, key)),
    });
  }
  return works;
}

/**
 * svc's own open findings: standing where the diff still shows the text they were made on at
 * their lines (their fingerprint recomputed on today's diff matches the one they carry), outdated
 * otherwise. Another user's discussion is neither, whatever markers it holds.
 */
function ownFindings(
  discussions: readonly GitlabDiscussion[],
  self: number | undefined,
  patches: ReadonlyMap<string, string | undefined>,
): { standing: Set<string>; outdated: GitlabDiscussion[] } {
  const standing = new Set<string>();
  const outdated: GitlabDiscussion[] = [];
  for (const discussion of discussions) {
    const first = discussion.notes[0];
    if (self === undefined || !first || first.author.id !== self || first.resolved) continue;
    const finding = findingOf(discussion);
    if (!finding || fingerprintsIn(first.body).length === 0) continue;
    const now = standingPrint(discussion, finding, patches);
    if (now) standing.add(now);
    else outdated.push(discussion);
  }
  return { standing, outdated };
}

async function resolveAll(
  deps: PublishDeps,
  gitlab: GitlabPublisher,
  ref: PullRef,
  key: string,
  outdated: readonly GitlabDiscussion[],
): Promise<void> {
  for (const discussion of outdated)
    await gitlab.resolveDiscussion(ref, discussion.id).catch((error) => {
      // a discussion left open is noise, not a lost result: the review is still posted
      if (!(error instanceof PublishError)) throw error;
      deps.logger.warn("could not resolve an outdated discussion", {
        event: "output.resolve_failed",
        key,
        thread: discussion.id,
        status: error.failure.status,
        message: error.failure.message,
      });
    });
}

/**
 * The other side's line number of each context line of a patch: GitLab positions an unchanged
 * line by both its old and new numbers, an added line by its new one, a removed one by its old.
 */
function counterparts(patch: string | undefined): { right: Map<number, number>; left: Map<number, number> } {
  const right = new Map<number, number>();
  const left = new Map<number, number>();
  let oldLine = 0;
  let newLine = 0;
  let inHunk = false;
  for (const line of (patch ?? "").split("\n")) {
    const hunk = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(line);
    if (hunk) {
      oldLine = Number(hunk[1]);
      newLine = Number(hunk[2]);
      inHunk = true;
    } else if (!inHunk || line.startsWith("\\")) {
      // before the first hunk, or "\ No newline at end of file"
    } else if (line.startsWith("+")) newLine += 1;
    else if (line.startsWith("-")) oldLine += 1;
    else {
      right.set(newLine, oldLine);
      left.set(oldLine, newLine);
      oldLine += 1;
      newLine += 1;
    }
  }
  return { right, left };
}

async function postFindings(
  deps: PublishDeps,
  gitlab: GitlabPublisher,
  ref: PullRef,
  work: {
    stamp: Stamp;
    key: string;
    fresh: InlineComment[];
    refused: InlineComment[];
    previous: ReadonlyMap<string, string>;
    patches: ReadonlyMap<string, string | undefined>;
    request: { diff_refs: { base_sha: string; start_sha: string; head_sha: string } | null };
  },
): Promise<Remote> {
  const { stamp, key, fresh, refused, request } = work;
  const own = marker(stamp, key);
  const me = await gitlab.self();
  // an earlier attempt of this run whose answer was lost opened some already
  const opened = new Map<string, string>();
  for (const discussion of await gitlab.discussions(ref)) {
    const first = discussion.notes[0];
    if (first && first.author.id === me.id && first.body.includes(own))
      for (const print of fingerprintsIn(first.body)) opened.set(print, discussion.id);
  }
  // each finding with the discussion it opened (its review), whether this attempt opened it or not
  const record = (finding: InlineComment, discussion: string) =>
    recordReviewFindings(deps, { invocationId: stamp.invocation, ref, key, reviewId: discussion }, [finding]);
  refused.length = 0;
  let firstRemote: Remote | undefined;
  const refs = request.diff_refs;
  for (const finding of fresh) {
    const print = fingerprintsIn(finding.body)[0];
    const before = print ? opened.get(print) : undefined;
    if (before) {
      await record(finding, before);
      continue;
    }
    if (!refs) {
      refused.push(finding);
      continue;
    }
    const pairs = counterparts(work.patches.get(finding.path));
    const right = finding.side !== "LEFT";
    const other = (right ? pairs.right : pairs.left).get(finding.line);
    const position: NotePosition = {
      positionType: "text",
      baseSha: refs.base_sha,
      startSha: refs.start_sha,
      headSha: refs.head_sha,
      newPath: finding.path,
      oldPath: work.previous.get(finding.path) ?? finding.path,
      ...(right ? { newLine: String(finding.line) } : { oldLine: String(finding.line) }),
      ...(other !== undefined ? (right ? { oldLine: String(other) } : { newLine: String(other) }) : {}),
    };
    const range = finding.start_line !== undefined ? `\n<!-- svc:range:${finding.start_line} -->` : "";
    const lines = finding.start_line !== undefined ? `Lines ${finding.start_line}-${finding.line}: ` : "";
    try {
      const remote = await gitlab.createDiscussion(ref, `${lines}${finding.body}${range}\n${own}`, position);
      firstRemote ??= remote;
      await record(finding, remote.discussionId);
    } catch (error) {
      // GitLab refused the position (a line it does not show): the finding goes to the summary
      if (!(error instanceof PublishError) || error.failure.status !== "400") throw error;
      refused.push(finding);
    }
  }
  return firstRemote ?? { id: `findings:${ref.number}`, url: null };
}
