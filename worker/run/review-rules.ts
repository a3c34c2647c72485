import type { Pipeline } from "../../shared/config/types.ts";
import { type PathRule, rulesFor } from "../../shared/review/path-rules.ts";
import { REVIEW_FILE, type ReviewFacts, reviewsPulls } from "../checkout/review-rules.ts";
import type { ResolvedEvent } from "../event/resolve.ts";
import type { ReviewPrompt } from "./prompt.ts";

/**
 * A pull request review's rules for one run: the pipeline's `review.paths`, then the base commit's
 * `.svc/review.yaml` and AGENTS.md (worker/checkout/review-rules.ts). Undefined for a run that
 * reviews nothing.
 */
export interface RunReview {
  facts: ReviewFacts;
  /** the pipeline's rules first, then the repository's */
  rules: { rule: PathRule; from: string }[];
}

export function runReview(
  pipeline: Pick<Pipeline, "review" | "outputs" | "file">,
  facts: ReviewFacts | undefined,
): RunReview | undefined {
  if (!reviewsPulls(pipeline)) return undefined;
  const own = (pipeline.review?.paths ?? []).map((rule) => ({
    rule,
    from: `review.paths of ${pipeline.file}`,
  }));
  const repo = (facts?.repo?.paths ?? []).map((rule) => ({
    rule,
    from: `${REVIEW_FILE} of the base branch`,
  }));
  return { facts: facts ?? {}, rules: [...own, ...repo] };
}

/** What the agent's prompt says of the rules: those of the changed paths only. */
export function reviewPrompt(review: RunReview): ReviewPrompt | undefined {
  const changed = review.facts.changed?.paths;
  const matching = (rule: PathRule) => (changed ? (rulesFor([rule], changed)[0]?.matched ?? []) : []);
  const rules: ReviewPrompt["rules"] = [];
  const ignored: ReviewPrompt["ignored"] = [];
  for (const { rule, from } of review.rules) {
    const matched = matching(rule);
    // a rule for paths this pull request leaves alone stays out of the prompt
    if (changed && matched.length === 0) continue;
    if (rule.ignore) ignored.push({ path: rule.path, matched });
    else if (rule.instructions)
      rules.push({ path: rule.path, instructions: rule.instructions, from, matched });
  }
  const repo = review.facts.repo;
  const guidelines = repo?.guidelines ? { text: repo.guidelines, base: repo.base } : undefined;
  if (!guidelines && rules.length === 0 && ignored.length === 0) return undefined;
  return { ...(guidelines ? { guidelines } : {}), rules, ignored, changedKnown: changed !== undefined };
}

/** The `ignore: true` rules, whose findings are dropped before publishing (worker/outputs/review.ts). */
export function ignoreRules(review: RunReview | undefined): PathRule[] {
  return (review?.rules ?? []).map(({ rule }) => rule).filter((rule) => rule.ignore);
}

/**
 * The lines a pull request changes, as GitHub counts them (additions + deletions): from the
 * event's `pull_request` when it states both, else from the mirror's diff; undefined when neither
 * can say (no checkout of a configured repository).
 */
export function changedLines(event: ResolvedEvent, facts: ReviewFacts | undefined): number | undefined {
  const pull = (event.payload as { pull_request?: { additions?: unknown; deletions?: unknown } } | null)
    ?.pull_request;
  if (pull && typeof pull.additions === "number" && typeof pull.deletions === "number")
    return pull.additions + pull.deletions;
  return facts?.changed?.lines;
}

/** A comment command asking for the review whatever its size: `--force` among its arguments. */
export function forced(event: ResolvedEvent): boolean {
  return (event.command?.args ?? "").split(/\s+/).includes("--force");
}

/** The pull request is above `review.max_changed_lines` and nobody asked with `--force`. */
export function tooLarge(
  pipeline: Pick<Pipeline, "review">,
  event: ResolvedEvent,
  facts: ReviewFacts | undefined,
): { lines: number; max: number } | undefined {
  const max = pipeline.review?.maxChangedLines;
  if (max === undefined || forced(event)) return undefined;
  const lines = changedLines(event, facts);
  return lines !== undefined && lines > max ? { lines, max } : undefined;
}
