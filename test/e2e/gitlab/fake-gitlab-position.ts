import { errors, type FakeMergeRequest, type Reply } from "./fake-gitlab-entities.ts";

/**
 * A diff note's `position`, checked as GitLab checks it: Grape validates the parameters' presence
 * and types first (`{"error": "position[base_sha] is missing"}`), then the note model needs a line
 * code, which exists only when the shas are the merge request's current diff refs, the path is one
 * of its diffs, and the line is one the diff shows on that side: `new_line` alone an added line,
 * `old_line` alone a removed one, both an unchanged line with those two numbers. Anything else is
 * GitLab's well-known "line_code can't be blank" 400.
 */
export interface Position {
  base_sha: string;
  start_sha: string;
  head_sha: string;
  position_type: string;
  old_path: string | null;
  new_path: string | null;
  old_line: number | null;
  new_line: number | null;
  line_range: unknown;
}

const REQUIRED = ["base_sha", "start_sha", "head_sha", "position_type"] as const;

/** The position as GitLab stores and shows it, or the 400 Grape answers for malformed parameters. */
export function parsePosition(given: unknown): Position | Reply {
  if (typeof given !== "object" || given === null || Array.isArray(given))
    return errors.invalid("position is invalid");
  const fields = given as Record<string, unknown>;
  const problems = REQUIRED.filter((key) => typeof fields[key] !== "string" || fields[key] === "").map(
    (key) => `position[${key}] is missing`,
  );
  if (problems.length === 0 && !["text", "image"].includes(fields.position_type as string))
    problems.push("position[position_type] does not have a valid value");
  const line = (key: "old_line" | "new_line") => {
    const value = fields[key];
    if (value === undefined || value === null || value === "") return null;
    const number = typeof value === "number" ? value : Number(value);
    if (!Number.isInteger(number)) {
      problems.push(`position[${key}] is invalid`);
      return null;
    }
    return number;
  };
  const old_line = line("old_line");
  const new_line = line("new_line");
  if (problems.length) return errors.invalid(problems.join(", "));
  const path = (key: "old_path" | "new_path") =>
    typeof fields[key] === "string" ? (fields[key] as string) : null;
  return {
    base_sha: fields.base_sha as string,
    start_sha: fields.start_sha as string,
    head_sha: fields.head_sha as string,
    position_type: fields.position_type as string,
    old_path: path("old_path"),
    new_path: path("new_path"),
    old_line,
    new_line,
    line_range: fields.line_range ?? null,
  };
}

/** Whether GitLab would find a line code for this position in the merge request as it is now. */
export function hasLineCode(mr: FakeMergeRequest, position: Position): boolean {
  const refs = mr.diff_refs;
  if (
    position.position_type !== "text" ||
    position.base_sha !== refs.base_sha ||
    position.start_sha !== refs.start_sha ||
    position.head_sha !== refs.head_sha
  )
    return false;
  const path = position.new_path ?? position.old_path;
  const file = mr.diffs.find((diff) => diff.new_path === path);
  if (!file) return false;
  const { old_line, new_line } = position;
  if (old_line === null && new_line === null) return false;
  return diffLines(file.diff).some((shown) => shown.old === old_line && shown.new === new_line);
}

/** The lines a GitLab diff (hunks only, no `---`/`+++` header) shows, by their number on each side. */
export function diffLines(diff: string): { old: number | null; new: number | null }[] {
  const lines: { old: number | null; new: number | null }[] = [];
  let oldNumber = 0;
  let newNumber = 0;
  let inHunk = false;
  for (const line of diff.split("\n")) {
    const hunk = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(line);
    if (hunk) {
      oldNumber = Number(hunk[1]);
      newNumber = Number(hunk[2]);
      inHunk = true;
      continue;
    }
    if (!inHunk) continue;
    if (line.startsWith("+")) lines.push({ old: null, new: newNumber++ });
    else if (line.startsWith("-")) lines.push({ old: oldNumber++, new: null });
    else if (line.startsWith(" ")) lines.push({ old: oldNumber++, new: newNumber++ });
    // "\ No newline at end of file" and the split's trailing "" are on neither side
  }
  return lines;
}
