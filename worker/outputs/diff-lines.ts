/**
 * Which lines of a pull request an inline review comment may sit on. The code host refuses a
 * whole review (422) when one comment's line is outside the diff, so the lines are read from
 * each file's unified-diff `patch` first: the RIGHT side is added and context lines of the new
 * file, the LEFT side deleted and context lines of the old one.
 */
export interface FileLines {
  left: Set<number>;
  right: Set<number>;
}

const HUNK = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/;

export function patchLines(patch: string | undefined): FileLines {
  const lines: FileLines = { left: new Set(), right: new Set() };
  if (!patch) return lines;
  let left = 0;
  let right = 0;
  let inHunk = false;
  for (const line of patch.split("\n")) {
    const hunk = HUNK.exec(line);
    if (hunk) {
      left = Number(hunk[1]);
      right = Number(hunk[2]);
      inHunk = true;
      continue;
    }
    if (!inHunk || line.startsWith("\\")) continue; // "\ No newline at end of file"
    if (line.startsWith("+")) lines.right.add(right++);
    else if (line.startsWith("-")) lines.left.add(left++);
    else {
      lines.left.add(left++);
      lines.right.add(right++);
    }
  }
  return lines;
}

export type DiffMap = Map<string, FileLines>;

export function diffMap(files: readonly { filename: string; patch?: string }[]): DiffMap {
  return new Map(files.map((file) => [file.filename, patchLines(file.patch)]));
}

export interface InlineComment {
  path: string;
  line: number;
  side?: "LEFT" | "RIGHT";
  start_line?: number;
  body: string;
}

/** Whether the code host accepts the comment inline: every line it spans is in the diff, on its side. */
export function inDiff(diff: DiffMap, comment: InlineComment): boolean {
  const file = diff.get(comment.path);
  if (!file) return false;
  const side = comment.side === "LEFT" ? file.left : file.right;
  const first = comment.start_line ?? comment.line;
  if (first > comment.line) return false;
  for (let line = first; line <= comment.line; line += 1) if (!side.has(line)) return false;
  return true;
}

/** Splits comments into those posted inline and those moved into the review body. */
export function placeComments(
  diff: DiffMap,
  comments: readonly InlineComment[],
): { inline: InlineComment[]; moved: InlineComment[] } {
  const inline: InlineComment[] = [];
  const moved: InlineComment[] = [];
  for (const comment of comments) (inDiff(diff, comment) ? inline : moved).push(comment);
  return { inline, moved };
}

/** The review body with each moved comment appended as `path:line — text`. */
export function bodyWithMoved(body: string, moved: readonly InlineComment[]): string {
  if (moved.length === 0) return body;
  const lines = moved.map((comment) => {
    const where = comment.start_line ? `${comment.start_line}-${comment.line}` : `${comment.line}`;
    return `- ${comment.path}:${where} — ${comment.body}`;
  });
  const head = body.trimEnd();
  return `${head}${head ? "\n\n" : ""}Comments on lines outside the diff:\n${lines.join("\n")}`;
}

/** Each side's lines of a unified-diff `patch` with their text, by line number (the prefix removed). */
export function patchText(patch: string | undefined): {
  left: Map<number, string>;
  right: Map<number, string>;
} {
  const text = { left: new Map<number, string>(), right: new Map<number, string>() };
  let left = 0;
  let right = 0;
  let inHunk = false;
  for (const line of (patch ?? "").split("\n")) {
    const hunk = HUNK.exec(line);
    if (hunk) {
      left = Number(hunk[1]);
      right = Number(hunk[2]);
      inHunk = true;
      continue;
    }
    if (!inHunk || line.startsWith("\\")) continue;
    if (line.startsWith("+")) text.right.set(right++, line.slice(1));
    else if (line.startsWith("-")) text.left.set(left++, line.slice(1));
    else {
      text.left.set(left++, line.slice(1));
      text.right.set(right++, line.slice(1));
    }
  }
  return text;
}
