import { matchesGlob } from "node:path";

/**
 * Review rules per path: `review.paths` of a pipeline and `paths` of a repository's
 * `.svc/review.yaml` (read from the base commit, worker/checkout/review-rules.ts). One shape, one
 * parser, so a repository's file is judged exactly as a pipeline's block is.
 */
export interface PathRule {
  /** a glob over repository paths (`db/**`, `**\/*.snap`); `*` and `**` skip names starting with a dot */
  path: string;
  /** what the agent is told about the changed files this rule matches */
  instructions?: string;
  /** findings on matching paths are dropped before publishing, and counted */
  ignore?: boolean;
}

const RULE_KEYS = ["path", "instructions", "ignore"];

/** A problem of one rule: where (`[index, key]` below the list) and the message with its fix. */
export type RuleProblem = { at: (string | number)[]; message: string };

/** Node's glob matcher (minimatch's syntax), the one svc uses wherever a path rule is applied. */
export function matchesPath(path: string, glob: string): boolean {
  return matchesGlob(path, glob);
}

/** The rules of `value` (a list of `{ path, instructions?, ignore? }`); `where` names the list in messages. */
export function parsePathRules(
  value: unknown,
  where: string,
): { rules: PathRule[]; problems: RuleProblem[] } {
  const problems: RuleProblem[] = [];
  const rules: PathRule[] = [];
  if (!Array.isArray(value)) {
    problems.push({
      at: [],
      message: `"${where}" must be a list such as [{ path: "db/**", instructions: "..." }, { path: "**/*.snap", ignore: true }]`,
    });
    return { rules, problems };
  }
  value.forEach((entry, index) => {
    const at = (key?: string) => (key ? [index, key] : [index]);
    const name = (key?: string) => `${where}[${index}]${key ? `.${key}` : ""}`;
    if (entry === null || typeof entry !== "object" || Array.isArray(entry)) {
      problems.push({
        at: at(),
        message: `"${name()}" must be a mapping { path, instructions } or { path, ignore: true }`,
      });
      return;
    }
    const raw = entry as Record<string, unknown>;
    for (const key of Object.keys(raw)) {
      if (!RULE_KEYS.includes(key))
        problems.push({
          at: at(key),
          message: `"${name(key)}" is not allowed - a path rule takes only ${RULE_KEYS.join(", ")}; delete the key`,
        });
    }
    const path = raw.path;
    const pathProblem = globProblem(path);
    if (pathProblem) problems.push({ at: at("path"), message: `"${name("path")}" ${pathProblem}` });
    const instructions = raw.instructions;
    if (instructions !== undefined && (typeof instructions !== "string" || instructions.trim() === ""))
      problems.push({
        at: at("instructions"),
        message: `"${name("instructions")}" must be non-empty text - what the agent should know about these files`,
      });
    const ignore = raw.ignore;
    if (ignore !== undefined && typeof ignore !== "boolean")
      problems.push({
        at: at("ignore"),
        message: `"${name("ignore")}" must be a boolean - write ignore: true to drop findings on these paths`,
      });
    const hasText = typeof instructions === "string" && instructions.trim() !== "";
    if (ignore === true && hasText)
      problems.push({
        at: at(),
        message: `"${name()}" sets both instructions and ignore: true - findings on an ignored path are dropped, so its instructions would never matter; keep one`,
      });
    else if (ignore !== true && !hasText && instructions === undefined)
      problems.push({
        at: at(),
        message: `"${name()}" says nothing about its paths - add instructions: "..." or ignore: true`,
      });
    if (pathProblem || problems.some((problem) => problem.at[0] === index)) return;
    rules.push({
      path: path as string,
      ...(hasText ? { instructions: (instructions as string).trim() } : {}),
      ...(ignore === true ? { ignore: true } : {}),
    });
  });
  return { rules, problems };
}

/** Why `glob` is no usable path glob, or undefined when it is one. */
function globProblem(glob: unknown): string | undefined {
  if (glob === undefined || glob === null)
    return 'is required - write a glob over repository paths such as "db/**"';
  if (typeof glob !== "string" || glob.trim() === "") return 'must be a non-empty glob such as "db/**"';
  if (glob.startsWith("/") || glob.startsWith("./"))
    return `must be relative to the repository root - write ${JSON.stringify(glob.replace(/^\.?\//, ""))}`;
  if (glob.split("/").includes(".."))
    return 'must not leave the repository with ".." - write a path from its root';
  try {
    matchesPath("probe", glob);
  } catch (error) {
    return `is not a glob svc can read (${(error as Error).message}) - use *, ** and {a,b}`;
  }
  return undefined;
}

/** The rules whose glob matches at least one of `paths`, each with the paths it matches. */
export function rulesFor(
  rules: readonly PathRule[],
  paths: readonly string[],
): { rule: PathRule; matched: string[] }[] {
  return rules.flatMap((rule) => {
    const matched = paths.filter((path) => matchesPath(path, rule.path));
    return matched.length ? [{ rule, matched }] : [];
  });
}

/** Whether any `ignore: true` rule matches `path`. */
export function isIgnored(rules: readonly PathRule[], path: string): boolean {
  return rules.some((rule) => rule.ignore && matchesPath(path, rule.path));
}
