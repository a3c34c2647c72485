import { createHash } from "node:crypto";
import type { ReviewComment } from "./codehost.ts";
import { type InlineComment, patchText } from "./diff-lines.ts";

/**
 * No finding twice. An inline comment's fingerprint is its path, the diff's text around its lines
 * (not their numbers, so a finding keeps its fingerprint when unrelated edits move it) and a hash of
 * its normalised body; it travels in a hidden marker in the comment. A finding whose fingerprint
 * svc already posted on the pull request, in a comment that still stands (its lines unchanged), is
 * not posted again.
 */
const CONTEXT_LINES = 2;
const FINGERPRINT = /<!-- svc:finding:([0-9a-f]{16}) -->/g;

export function findingMarker(fingerprint: string): string {
  return `<!-- svc:finding:${fingerprint} -->`;
}

/** Lower case, one space between words, svc's own markers left out. */
function normalised(body: string): string {
  return body
    .replace(/<!-- svc:[^>]*-->/g, "")
    .toLowerCase()
    .replace(/\s+/g, " ")
    .trim();
}

/** The text of the commented lines and up to two lines either side, as far as the diff shows them. */
export function hunkContext(patch: string | undefined, comment: InlineComment): string[] {
  const side = patchText(patch)[comment.side === "LEFT" ? "left" : "right"];
  const lines: string[] = [];
  const first = (comment.start_line ?? comment.line) - CONTEXT_LINES;
  for (let line = first; line <= comment.line + CONTEXT_LINES; line += 1) {
    const text = side.get(line);
    if (text !== undefined) lines.push(text.trim());
  }
  return lines;
}

export function fingerprint(comment: InlineComment, context: readonly string[]): string {
  const bodyHash = createHash("sha256").update(normalised(comment.body)).digest("hex");
  return createHash("sha256")
    .update([comment.path, context.join("\n"), bodyHash].join("\0"))
    .digest("hex")
    .slice(0, 16);
}

/** Fingerprints in a comment's body. */
export function fingerprintsIn(body: string | null | undefined): string[] {
  return [...(body ?? "").matchAll(FINGERPRINT)].map((match) => match[1]!);
}

/**
 * The fingerprints of findings that still stand on the pull request: in a comment opening a thread
 * (not a reply), of a review svc posted itself (`ownReviews`, from its own deliveries: a pull
 * request author can write any marker into a comment of their own), whose lines have not changed.
 */
export function standingFingerprints(
  comments: readonly ReviewComment[],
  ownReviews: ReadonlySet<string>,
  resolved: ReadonlySet<string> = new Set(),
): Set<string> {
  const standing = new Set<string>();
  for (const comment of comments) {
    if (comment.in_reply_to_id || comment.line == null || comment.pull_request_review_id === null) continue;
    if (!ownReviews.has(String(comment.pull_request_review_id))) continue;
    // a resolved thread is out of sight: its finding is raised again unless a dismissal drops it
    if (resolved.has(String(comment.id))) continue;
    for (const found of fingerprintsIn(comment.body)) standing.add(found);
  }
  return standing;
}

/**
 * A finding's rule: the first line of its body, normalised. A dismissal drops a later finding with
 * the same rule on the same path even when its fingerprint moved (its lines or wording around them).
 */
export function ruleOf(body: string): string {
  const first =
    body
      .replace(/<!-- svc:[^>]*-->/g, "")
      .trim()
      .split(/\r?\n/, 1)[0] ?? "";
  return normalised(first).slice(0, 200);
}

/** What a review drops as dismissed before (dismissals.ts): fingerprints, and `path\0rule` pairs. */
export interface Dismissed {
  fingerprints: ReadonlySet<string>;
  rules: ReadonlySet<string>;
}

export const NONE_DISMISSED: Dismissed = { fingerprints: new Set(), rules: new Set() };

export function ruleKey(path: string, rule: string): string {
  return `${path}\0${normalised(rule)}`;
}

/**
 * Marks each inline comment with its fingerprint and leaves out those a member dismissed before
 * and those already standing; the counts of those left out go into the review body.
 */
export function dropRepeated(
  files: readonly { filename: string; patch?: string }[],
  inline: readonly InlineComment[],
  standing: ReadonlySet<string>,
  dismissed: Dismissed = NONE_DISMISSED,
): { fresh: InlineComment[]; repeated: number; dismissed: number } {
  const patches = new Map(files.map((file) => [file.filename, file.patch]));
  const fresh: InlineComment[] = [];
  const seen = new Set<string>();
  let repeated = 0;
  let dropped = 0;
  for (const comment of inline) {
    const print = fingerprint(comment, hunkContext(patches.get(comment.path), comment));
    if (
      dismissed.fingerprints.has(print) ||
      dismissed.rules.has(ruleKey(comment.path, ruleOf(comment.body)))
    ) {
      dropped += 1;
      continue;
    }
    if (standing.has(print)) {
      repeated += 1;
      continue;
    }
    // the same finding twice in one review is posted once
    if (seen.has(print)) continue;
    seen.add(print);
    fresh.push({ ...comment, body: `${comment.body.trimEnd()}\n\n${findingMarker(print)}` });
  }
  return { fresh, repeated, dismissed: dropped };
}

export function bodyWithRepeated(body: string, repeated: number, dismissed = 0): string {
  const lines: string[] = [];
  if (repeated > 0) lines.push(`${repeated} ${repeated === 1 ? "finding" : "findings"} already reported`);
  if (dismissed > 0)
    lines.push(
      dismissed === 1
        ? "1 finding dismissed before was not raised again"
        : `${dismissed} findings dismissed before were not raised again`,
    );
  if (lines.length === 0) return body;
  const head = body.trimEnd();
  return `${head}${head ? "\n\n" : ""}${lines.join("\n")}`;
}
