import { type Interval, wilsonInterval } from "../../shared/statistics.ts";

/**
 * What a backtest compares (issue 57): a version's findings on a pull request (each a path and a
 * line range at the replayed head) against what people did afterwards: the lines human reviewers
 * commented on, and the lines that the commits pushed after the replayed head changed before the
 * merge. A finding "meets" either when it is on the same path within PROXIMITY lines of it.
 */
export const PROXIMITY = 3;

export interface Finding {
  path: string;
  start: number;
  end: number;
}

/** A review comment as GitHub lists it (`GET /repos/{o}/{r}/pulls/{n}/comments`). */
export interface HumanComment {
  path: string;
  line: number | null;
  original_line?: number | null;
  start_line?: number | null;
  original_start_line?: number | null;
  user: { login: string; type?: string } | null;
  body?: string;
}

/** A file of GitHub's comparison of two commits (`GET /repos/{o}/{r}/compare/{base}...{head}`). */
export interface ComparedFile {
  filename: string;
  status: string;
  previous_filename?: string;
  patch?: string;
}

export interface PullComparison {
  findings: number;
  /** findings within PROXIMITY lines of a human review comment */
  onHumanLines: number;
  /** findings within PROXIMITY lines of a line a later commit changed */
  onFixedLines: number;
  humanComments: number;
  /** human comments with a finding near them */
  humanCommentsFound: number;
  /** files a later commit changed */
  fixedFiles: number;
}

/**
 * The findings of a run: the inline comments of the reviews in its result, as its agent wrote them
 * (the same for a live run and a held one, and independent of where a held review would have been
 * placed against the pull request's diff as GitHub shows it now, after the merge); for a run
 * without a result, those of its held outputs (`held/outputs.json`).
 */
export function findingsOf(run: { held: string | null; result: unknown } | null): Finding[] | null {
  if (!run) return null;
  const result = run.result;
  if (result && typeof result === "object")
    return Object.values(result).flatMap((value) =>
      value && typeof value === "object" ? commentsOf((value as { comments?: unknown }).comments) : [],
    );
  const held = run.held === null ? null : safeJson(run.held);
  const outputs = Array.isArray(held) ? held : [];
  return outputs.flatMap((output) => commentsOf((output as { comments?: unknown }).comments));
}

function commentsOf(value: unknown): Finding[] {
  if (!Array.isArray(value)) return [];
  return value.flatMap((entry) => {
    const comment = entry as { path?: unknown; line?: unknown; start_line?: unknown };
    if (typeof comment.path !== "string" || typeof comment.line !== "number") return [];
    const start = typeof comment.start_line === "number" ? comment.start_line : comment.line;
    return [{ path: comment.path, start: Math.min(start, comment.line), end: comment.line }];
  });
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/**
 * The lines of the replayed head each later commit changed, by path, from the comparison's
 * patches: a removed or replaced line is its old number, an added line marks the old line it
 * follows. A file removed or renamed, or changed with no patch (binary, too large), counts whole.
 */
export function changedLines(files: readonly ComparedFile[]): Map<string, Set<number> | "whole"> {
  const changed = new Map<string, Set<number> | "whole">();
  for (const file of files) {
    const path = file.previous_filename ?? file.filename;
    if (file.status === "added") continue; // no line of the replayed head is in a new file
    if (file.status === "removed" || file.status === "renamed" || file.patch === undefined) {
      changed.set(path, "whole");
      continue;
    }
    const lines = new Set<number>();
    let old = 0;
    for (const text of file.patch.split("\n")) {
      const hunk = /^@@ -(\d+)(?:,\d+)? \+\d+(?:,\d+)? @@/.exec(text);
      if (hunk) {
        old = Number(hunk[1]);
        continue;
      }
      if (text.startsWith("-")) {
        lines.add(old);
        old += 1;
      } else if (text.startsWith("+")) {
        lines.add(Math.max(1, old - 1));
        lines.add(old);
      } else if (!text.startsWith("\\")) old += 1;
    }
    changed.set(path, lines);
  }
  return changed;
}

/** The comments people wrote: not svc's own (its login, a bot, or a comment carrying its markers). */
export function humanComments(comments: readonly HumanComment[], ownLogins: readonly string[]): Finding[] {
  const own = new Set(ownLogins.map((login) => login.toLowerCase()));
  return comments.flatMap((comment) => {
    const login = comment.user?.login.toLowerCase() ?? "";
    if (own.has(login) || comment.user?.type === "Bot" || /<!-- svc:/.test(comment.body ?? "")) return [];
    const line = comment.line ?? comment.original_line ?? null;
    if (line === null) return [];
    const start = comment.start_line ?? comment.original_start_line ?? line;
    return [{ path: comment.path, start: Math.min(start, line), end: line }];
  });
}

const near = (a: Finding, b: Finding) =>
  a.path === b.path && a.start - PROXIMITY <= b.end && b.start - PROXIMITY <= a.end;

function onChanged(finding: Finding, changed: Map<string, Set<number> | "whole">): boolean {
  const lines = changed.get(finding.path);
  if (lines === undefined) return false;
  if (lines === "whole") return true;
  for (let line = finding.start - PROXIMITY; line <= finding.end + PROXIMITY; line += 1)
    if (lines.has(line)) return true;
  return false;
}

export function comparePull(
  findings: readonly Finding[],
  human: readonly Finding[],
  changed: Map<string, Set<number> | "whole">,
): PullComparison {
  return {
    findings: findings.length,
    onHumanLines: findings.filter((finding) => human.some((comment) => near(finding, comment))).length,
    onFixedLines: findings.filter((finding) => onChanged(finding, changed)).length,
    humanComments: human.length,
    humanCommentsFound: human.filter((comment) => findings.some((finding) => near(finding, comment))).length,
    fixedFiles: changed.size,
  };
}

/** A share with its 95% Wilson interval (null when there is nothing to share out). */
export interface Share {
  count: number;
  n: number;
  rate: number | null;
  interval: Interval | null;
}

export function share(count: number, n: number): Share {
  return { count, n, rate: n === 0 ? null : count / n, interval: wilsonInterval(count, n) };
}

export interface VersionTotals {
  pulls: number;
  findings: number;
  onHumanLines: Share;
  onFixedLines: Share;
  /** human comments a finding was near: how much of what people raised the version raised too */
  humanCommentsFound: Share;
}

/** Totals over the pull requests a version was compared on: findings pooled, with intervals. */
export function totals(comparisons: readonly PullComparison[]): VersionTotals {
  const sum = (pick: (c: PullComparison) => number) => comparisons.reduce((n, c) => n + pick(c), 0);
  const findings = sum((c) => c.findings);
  return {
    pulls: comparisons.length,
    findings,
    onHumanLines: share(
      sum((c) => c.onHumanLines),
      findings,
    ),
    onFixedLines: share(
      sum((c) => c.onFixedLines),
      findings,
    ),
    humanCommentsFound: share(
      sum((c) => c.humanCommentsFound),
      sum((c) => c.humanComments),
    ),
  };
}
