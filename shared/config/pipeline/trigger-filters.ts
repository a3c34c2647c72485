import { bool, strList, type YamlMap } from "../read.ts";
import { type ConfigFile, formatPath, type KeyPath } from "../source.ts";
import type { DaemonSettings, EventMatcher, PullRequestFilters } from "../types.ts";

/**
 * The pull request filters of a `trigger.codehost` `{ events }` entry, in GitHub Actions' shape
 * (judged at dispatch by worker/event/filters.ts). Written with underscores, as every svc key is.
 */
export const FILTER_KEYS = ["branches", "branches_ignore", "paths", "paths_ignore", "labels", "drafts"];

const GLOB_LISTS = [
  ["branches", "branches"],
  ["branches_ignore", "branchesIgnore"],
  ["paths", "paths"],
  ["paths_ignore", "pathsIgnore"],
] as const;

/** The filters `item` sets, or undefined; `events` are the entry's, read before. */
export function readFilters(
  f: ConfigFile,
  item: YamlMap,
  path: KeyPath,
  events: string[],
): PullRequestFilters | undefined {
  const written = FILTER_KEYS.filter((key) => item[key] !== undefined);
  if (written.length === 0) return undefined;
  // a filter reads the pull request of the payload: another event (a push, a comment) has none,
  // and judging it on its own terms (a push's branch) would be a second meaning for one key
  const others = events.filter((event) => event !== "pull_request" && !event.startsWith("pull_request."));
  if (others.length) {
    f.report(
      [...path, written[0]!],
      "trigger_filter_refused",
      `"${formatPath([...path, written[0]!])}" filters pull requests only, and this entry also lists ${others.join(", ")} - move ${others.length > 1 ? "those events" : others[0]} to an entry of its own without ${written.join(", ")}`,
    );
    return undefined;
  }
  for (const [a, b] of [
    ["branches", "branches_ignore"],
    ["paths", "paths_ignore"],
  ] as const) {
    if (item[a] !== undefined && item[b] !== undefined)
      f.report(
        [...path, b],
        "invalid_value",
        `"${formatPath([...path, a])}" and "${formatPath([...path, b])}" cannot both be set on one entry (as in GitHub Actions) - keep ${a}, and write what it leaves out as "!<glob>" after the globs it takes`,
      );
  }
  const filters: PullRequestFilters = {};
  for (const [key, field] of GLOB_LISTS) {
    const list = globList(f, item, key, path);
    if (list) filters[field] = list;
  }
  const labels = strList(f, item, "labels", path);
  if (labels?.length) filters.labels = labels;
  else if (labels) emptyList(f, path, "labels");
  const drafts = bool(f, item, "drafts", path);
  if (drafts !== undefined) filters.drafts = drafts;
  return filters;
}

/** A list of globs; one that only excludes (`!`) would match nothing, as in GitHub Actions. */
function globList(f: ConfigFile, item: YamlMap, key: string, path: KeyPath): string[] | undefined {
  const list = strList(f, item, key, path);
  if (!list) return undefined;
  if (list.length === 0) return emptyList(f, path, key);
  const bad = list.findIndex((glob) => glob === "!" || glob.startsWith("/"));
  if (bad >= 0) {
    f.report(
      [...path, key, bad],
      "invalid_value",
      `"${formatPath([...path, key, bad])}" must be a glob relative to the repository's root, e.g. src/** or "!docs/**" (got "${list[bad]}")`,
    );
    return undefined;
  }
  if (list[0]!.startsWith("!")) {
    f.report(
      [...path, key, 0],
      "invalid_value",
      `"${formatPath([...path, key])}" starts with an exclusion ("${list[0]}"), which has nothing to exclude from - put a glob that includes first, e.g. ${key}: ["**", "${list[0]}"]`,
    );
    return undefined;
  }
  return list;
}

function emptyList(f: ConfigFile, path: KeyPath, key: string): undefined {
  f.report(
    [...path, key],
    "invalid_value",
    `"${formatPath([...path, key])}" must not be empty - list at least one, or delete the key to filter nothing`,
  );
  return undefined;
}

/**
 * GitLab's merge request events are not filtered yet (their base, labels and draft state sit
 * elsewhere, and their changed files behind another API): a filter there would be silently ignored,
 * so it is refused.
 */
export function checkFiltersOnGitlab(f: ConfigFile, matchers: EventMatcher[], daemon: DaemonSettings): void {
  if (daemon.codehost?.kind !== "gitlab") return;
  const keys = new Set<string>();
  for (const matcher of matchers) {
    for (const [key, value] of Object.entries(matcher.filters ?? {}))
      if (value !== undefined) keys.add(KEY_OF[key] ?? key);
  }
  if (keys.size === 0) return;
  f.report(
    ["trigger", "codehost"],
    "trigger_filter_refused",
    `"trigger.codehost" filters pull requests with ${[...keys].join(", ")}, and codehost.kind is gitlab: svc applies these to GitHub's pull requests only - delete them (narrow with repos, or list the exact merge_request events)`,
  );
}

const KEY_OF: Record<string, string> = { branchesIgnore: "branches_ignore", pathsIgnore: "paths_ignore" };

/** A command or a reply is asked for by a person, on no pull request event to filter: filters there are refused. */
export function refuseFilters(f: ConfigFile, item: YamlMap, path: KeyPath, what: string): void {
  for (const key of FILTER_KEYS.filter((k) => item[k] !== undefined))
    f.report(
      [...path, key],
      "trigger_filter_refused",
      `"${formatPath([...path, key])}" filters pull request events, and this entry fires on ${what}, which is asked for by a person - delete ${key}, or put it on an { events: [pull_request...] } entry`,
    );
}
