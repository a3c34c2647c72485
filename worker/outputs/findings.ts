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
): Set<string> {
  const standing = new Set<string>();
  for (const comment of comments) {
    if (comment.in_reply_to_id || comment.line == null || comment.pull_request_review_id === null) continue;
    if (!ownReviews.has(String(comment.pull_request_review_id))) continue;
    for (const found of fingerprintsIn(comment.body)) standing.add(found);
  }
  return standing;
}

/**
 * Marks each inline comment with its fingerprint and leaves out those already standing; the
 * count of those left out goes into the review body.
 */
export function dropRepeated(
  files: readonly { filename: string; patch?: string }[],
  inline: readonly InlineComment[],
  standing: ReadonlySet<string>,
): { fresh: InlineComment[]; repeated: number } {
  const patches = new Map(files.map((file) => [file.filename, file.patch]));
  const fresh: InlineComment[] = [];
  const seen = new Set<string>();
  let repeated = 0;
  for (const comment of inline) {
    const print = fingerprint(comment, hunkContext(patches.get(comment.path), comment));
    if (standing.has(print)) {
      repeated += 1;
      continue;
    }
    // the same finding twice in one review is posted once
    if (seen.has(print)) continue;
    seen.add(print);
    fresh.push({ ...comment, body: `${comment.body.trimEnd()}\n\n${findingMarker(print)}` });
  }
  return { fresh, repeated };
}

export function bodyWithRepeated(body: string, repeated: number): string {
  if (repeated === 0) return body;
  const line = `${repeated} ${repeated === 1 ? "finding" : "findings"} already reported`;
  const head = body.trimEnd();
  return `${head}${head ? "\n\n" : ""}${line}`;
}
