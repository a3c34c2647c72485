import type { InlineComment } from "./diff-lines.ts";
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
