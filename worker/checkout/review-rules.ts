import { parse } from "yaml";
import type { Pipeline } from "../../shared/config/types.ts";
import { type PathRule, parsePathRules } from "../../shared/review/path-rules.ts";
import { git } from "./git.ts";
import { catFile, parseBatch } from "./instructions.ts";

/**
 * What a pull request review learns from svc's mirror before its agent starts: the paths and lines
 * the pull request changes, and the repository's own review rules as its base commit has them.
 * Nothing is read from the worktree or the pull request's head: its author could write rules
 * there that silence the review of their own change (docs/worker.md, "Rules per path").
 */
export interface ReviewFacts {
  /** `git diff --numstat` from the merge base (else the base) to the head; `files` has each path's lines */
  changed?: { paths: string[]; lines: number; files?: { path: string; lines: number }[] };
  repo?: RepoReviewRules;
}

export interface RepoReviewRules {
  base: { sha: string; ref: string };
  /** the "Review guidelines" section of the base's AGENTS.md */
  guidelines?: string;
  /** `paths` of the base's `.svc/review.yaml` */
  paths: PathRule[];
  /** what was wrong in `.svc/review.yaml` (its bad rules are left out, the others kept) */
  problems: string[];
}

/** A pipeline that reviews pull requests: it has a `review` block or posts a `codehost.review`. */
export function reviewsPulls(pipeline: Pick<Pipeline, "review" | "outputs">): boolean {
  return (
    pipeline.review !== undefined ||
    Object.values(pipeline.outputs).some((binding) => binding.handler === "codehost.review")
  );
}

/** The repository's own rules, from these files of the base commit only. */
export const AGENTS_FILE = "AGENTS.md";
export const REVIEW_FILE = ".svc/review.yaml";
/** a section longer than this is cut: a prompt has room for rules, not for a manual */
const MAX_GUIDELINES = 8000;

export async function readReviewFacts(
  mirror: string,
  head: string,
  base: { sha: string; ref: string } | undefined,
  mergeBase: string | undefined,
): Promise<ReviewFacts> {
  if (!base) return {};
  const [changed, repo] = await Promise.all([
    changedFiles(mirror, mergeBase ?? base.sha, head),
    repoRules(mirror, base),
  ]);
  return { changed, repo };
}

/** Paths and changed lines (additions + deletions, as GitHub counts them; binary files count 0). */
export async function changedFiles(
  mirror: string,
  from: string,
  head: string,
): Promise<{ paths: string[]; lines: number; files: { path: string; lines: number }[] }> {
  const out = await git([
    "--git-dir",
    mirror,
    "diff",
    "--numstat",
    "-z",
    "--no-renames",
    "--no-ext-diff",
    "--no-textconv",
    from,
    head,
  ]);
  const files: { path: string; lines: number }[] = [];
  for (const record of out.split("\0")) {
    const match = /^(\d+|-)\t(\d+|-)\t(.+)$/s.exec(record);
    if (!match) continue;
    files.push({ path: match[3]!, lines: (Number(match[1]) || 0) + (Number(match[2]) || 0) });
  }
  const lines = files.reduce((total, file) => total + file.lines, 0);
  return { paths: files.map((file) => file.path), lines, files };
}

async function repoRules(mirror: string, base: { sha: string; ref: string }): Promise<RepoReviewRules> {
  const [agents, review] = parseBatch(
    await catFile(mirror, `${base.sha}:${AGENTS_FILE}\n${base.sha}:${REVIEW_FILE}\n`),
  );
  const guidelines = agents ? reviewGuidelines(agents.toString("utf8")) : undefined;
  const rules = review ? reviewFileRules(review.toString("utf8")) : { rules: [], problems: [] };
  return { base, ...(guidelines ? { guidelines } : {}), paths: rules.rules, problems: rules.problems };
}

/**
 * The section of an AGENTS.md headed like "Review guidelines" (any heading level, any case), up to
 * the next heading of its level or above; undefined when there is none or it is empty.
 */
export function reviewGuidelines(markdown: string): string | undefined {
  const lines = markdown.split(/\r?\n/);
  let level = 0;
  const body: string[] = [];
  let fence = false;
  for (const line of lines) {
    // a `#` inside a fenced code block is no heading
    if (/^\s*(```|~~~)/.test(line)) fence = !fence;
    const heading = fence ? null : /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    if (level === 0) {
      if (heading && /\breview guidelines?\b/i.test(heading[2]!)) level = heading[1]!.length;
      continue;
    }
    if (heading && heading[1]!.length <= level) break;
    body.push(line);
  }
  const text = body.join("\n").trim();
  if (!text) return undefined;
  return text.length > MAX_GUIDELINES
    ? `${text.slice(0, MAX_GUIDELINES)}\n[cut: the section is longer]`
    : text;
}

/** `.svc/review.yaml`: `paths: [{ path, instructions?, ignore? }]`, as a pipeline's `review.paths`. */
export function reviewFileRules(text: string): { rules: PathRule[]; problems: string[] } {
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (error) {
    return { rules: [], problems: [`${REVIEW_FILE} is not valid YAML: ${(error as Error).message}`] };
  }
  if (doc === null || doc === undefined) return { rules: [], problems: [] };
  if (typeof doc !== "object" || Array.isArray(doc) || !("paths" in doc))
    return { rules: [], problems: [`${REVIEW_FILE} must be a mapping with "paths: [...]"`] };
  const parsed = parsePathRules((doc as { paths: unknown }).paths, `${REVIEW_FILE} paths`);
  return { rules: parsed.rules, problems: parsed.problems.map((problem) => problem.message) };
}
