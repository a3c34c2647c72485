import type { InlineComment } from "./diff-lines.ts";
import type { OwnFinding } from "./finding-fates.ts";
import { fingerprint, fingerprintsIn, hunkContext } from "./findings.ts";
import type { GitlabDiscussion } from "./gitlab-publisher.ts";

/**
 * svc's findings as GitLab holds them: the first note of a positioned discussion. GitLab marks no
 * discussion outdated that svc can rely on, so whether a finding still applies is told the way
 * fingerprints are made: recomputed on today's diff at the path and line its position names, it
 * matches the fingerprint the note carries only while the text it was made on is still there.
 */
const RANGE = /<!-- svc:range:(\d+) -->/;

/** The finding an own discussion's first note states, as dropRepeated fingerprinted it. */
export function findingOf(discussion: GitlabDiscussion): InlineComment | undefined {
  const note = discussion.notes[0];
  const position = note?.position;
  if (!note || !position) return undefined;
  const right = position.new_line != null;
  const line = right ? position.new_line : position.old_line;
  const path = right ? position.new_path : position.old_path;
  if (typeof line !== "number" || !path) return undefined;
  const start = RANGE.exec(note.body)?.[1];
  return {
    path,
    line,
    side: right ? "RIGHT" : "LEFT",
    ...(start ? { start_line: Number(start) } : {}),
    // the finding's own text, without the lines it spans that postFindings put before it
    body: start ? note.body.replace(/^Lines \d+-\d+: /, "") : note.body,
  };
}

/**
 * The fingerprint the finding has on today's diff when that is the one its note carries (its lines
 * unchanged: it stands), undefined when its text changed or moved (outdated) or it carries none.
 */
export function standingPrint(
  discussion: GitlabDiscussion,
  finding: InlineComment,
  patches: ReadonlyMap<string, string | undefined>,
): string | undefined {
  const prints = fingerprintsIn(discussion.notes[0]?.body);
  if (prints.length === 0) return undefined;
  const now = fingerprint(finding, hunkContext(patches.get(finding.path), finding));
  return prints.includes(now) ? now : undefined;
}

/**
 * svc's findings on the merge request as finding-fates.ts judges them: each own positioned
 * discussion carrying a fingerprint, by its discussion (the review) and first note (the comment);
 * changed when the finding no longer applies to today's diff.
 */
export function fatesSeen(
  discussions: readonly GitlabDiscussion[],
  self: number,
  patches: ReadonlyMap<string, string | undefined>,
): OwnFinding[] {
  const seen: OwnFinding[] = [];
  for (const discussion of discussions) {
    const first = discussion.notes[0];
    const finding = first && first.author.id === self ? findingOf(discussion) : undefined;
    const print = fingerprintsIn(first?.body)[0];
    if (!first || !finding || !print) continue;
    const by = first.resolved ? first.resolved_by : null;
    seen.push({
      // the thread id gitlab-dismissals.ts records its dismissals by
      thread: `gitlab:${discussion.id}`,
      reviewId: discussion.id,
      commentId: String(first.id),
      fingerprint: print,
      resolved: first.resolved === true,
      changed: standingPrint(discussion, finding, patches) === undefined,
      resolvedBy: by ? (by.username ?? String(by.id)) : null,
    });
  }
  return seen;
}
