import { parsePathRules } from "../../review/path-rules.ts";
import { checkKeys, int, mapping, type YamlMap } from "../read.ts";
import type { ConfigFile } from "../source.ts";
import type { ReviewSettings } from "../types.ts";

const REVIEW_KEYS = ["max_changed_lines", "paths"];

/**
 * `review: { max_changed_lines, paths }`: how a pull request review treats large pull requests and
 * the rules per path (docs/worker.md, "Large pull requests" and "Rules per path").
 */
export function readReview(f: ConfigFile, root: YamlMap): ReviewSettings | undefined {
  if (root.review === undefined || root.review === null) return undefined;
  const raw = mapping(
    f,
    root.review,
    ["review"],
    ' such as { max_changed_lines: 5000, paths: [{ path: "db/**", instructions: "..." }] }',
  );
  if (!raw) return undefined;
  checkKeys(f, raw, ["review"], REVIEW_KEYS);
  const maxChangedLines = int(f, raw, "max_changed_lines", ["review"], { min: 1 });
  let paths: ReviewSettings["paths"] = [];
  if (raw.paths !== undefined && raw.paths !== null) {
    const parsed = parsePathRules(raw.paths, "review.paths");
    for (const problem of parsed.problems)
      f.report(["review", "paths", ...problem.at], "invalid_value", problem.message);
    paths = parsed.rules;
  }
  return { ...(maxChangedLines !== undefined ? { maxChangedLines } : {}), paths };
}
