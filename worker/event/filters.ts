import { matchesGlob } from "node:path";
import type { EventMatcher, Pipeline, PullRequestFilters } from "../../shared/config/types.ts";

/**
 * Pull request filters of `trigger.codehost` entries (docs/worker.md, "Which pipelines a trigger
 * fires"), judged at dispatch on a GitHub `pull_request.<action>` event: the payload settles the
 * draft state, the base branch and the labels; the changed files are read from GitHub
 * (worker/queue/changed-files.ts), and only when a filter that the payload let through needs them.
 */

/** What a GitHub pull request event's payload says that filters judge. */
export interface PullFacts {
  action: string;
  number: number;
  base: string;
  draft: boolean;
  labels: string[];
  /** the label a `labeled` event added */
  added?: string;
}

/** The pull request's changed files as dispatch read them, or why it could not. */
export type ChangedFiles = { files: string[]; complete: boolean } | { unknown: string };

type Json = Record<string, unknown>;
const obj = (value: unknown): Json | undefined =>
  value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Json) : undefined;
const str = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined);

/** The facts of a GitHub `pull_request.<action>` event; null for any other event (GitLab's included). */
export function pullFacts(eventName: string, payload: unknown): PullFacts | null {
  if (!eventName.startsWith("pull_request.")) return null;
  const body = obj(payload);
  const pull = obj(body?.pull_request);
  const base = str(obj(pull?.base)?.ref);
  if (!pull || typeof pull.number !== "number" || !base) return null;
  const labels = Array.isArray(pull.labels) ? pull.labels.flatMap((l) => str(obj(l)?.name) ?? []) : [];
  const added = str(obj(body?.label)?.name);
  return {
    action: eventName.slice("pull_request.".length),
    number: pull.number,
    base,
    draft: pull.draft === true,
    labels,
    ...(added ? { added } : {}),
  };
}

/** The actions a draft holds back, so that `ready_for_review` is their first delivery once it is ready. */
const HELD_BY_DRAFTS = ["pull_request.opened", "pull_request.reopened", "pull_request.synchronize"];
/** A draft's actions that fire anyway: a pipeline names them to learn of the draft's end or start. */
const DRAFT_PASSES = ["closed", "converted_to_draft", "ready_for_review"];

/**
 * Whether a matcher answers an event by name: one it lists (`pull_request` takes every action;
 * `exact` only the name itself), or one its filters imply: `ready_for_review` stands in for the
 * `opened` a draft held back, and `labeled` is how a `labels` entry is asked for.
 */
export function namesEvent(matcher: EventMatcher, eventName: string, exact = false): boolean {
  const listed = (name: string) =>
    matcher.events.some((event) => event === name || (!exact && name.startsWith(`${event}.`)));
  if (listed(eventName)) return true;
  if (matcher.command !== undefined || matcher.replies) return false;
  if (eventName === "pull_request.ready_for_review")
    return !matcher.filters?.drafts && HELD_BY_DRAFTS.some((event) => listed(event));
  if (eventName === "pull_request.labeled") return (matcher.filters?.labels?.length ?? 0) > 0;
  return false;
}

/** A glob list in GitHub Actions' way: in order, the last pattern matching decides, `!` excluding. */
export function globsMatch(value: string, globs: string[]): boolean {
  let matched = false;
  for (const glob of globs) {
    const exclude = glob.startsWith("!");
    if (exclude === matched && globMatch(value, exclude ? glob.slice(1) : glob)) matched = !exclude;
  }
  return matched;
}

/**
 * `*` (not `/`), `**`, `?`, `[...]`, `{a,b}` by Node's matcher, with dot files matched like any
 * other as GitHub Actions does (Node's skips a name starting with a dot unless the glob spells the
 * dot): a leading dot of each name is swapped for a character no path of GitHub's holds.
 */
function globMatch(value: string, glob: string): boolean {
  const undot = (text: string) => text.replace(/(^|\/)\./g, "$1\u0001");
  return matchesGlob(undot(value), undot(glob));
}

const list = (globs: string[]) => `[${globs.join(", ")}]`;

export type Verdict = { fires: true } | { fires: false; why: string } | { needsFiles: true };

/** One matcher's filters on a pull request event it names; `files` once dispatch read them. */
export function judge(filters: PullRequestFilters, pull: PullFacts, files?: ChangedFiles): Verdict {
  const no = (why: string): Verdict => ({ fires: false, why });
  if (pull.draft && !filters.drafts && !DRAFT_PASSES.includes(pull.action))
    return no(
      `#${pull.number} is a draft (drafts: false): it fires once the pull request is ready_for_review`,
    );
  if (filters.branches && !globsMatch(pull.base, filters.branches))
    return no(`base branch ${pull.base} matches none of branches ${list(filters.branches)}`);
  if (filters.branchesIgnore && globsMatch(pull.base, filters.branchesIgnore))
    return no(`base branch ${pull.base} matches branches_ignore ${list(filters.branchesIgnore)}`);
  if (filters.labels) {
    // GitHub's label names are unique regardless of case
    const wanted = (label: string) => filters.labels!.some((l) => l.toLowerCase() === label.toLowerCase());
    if (pull.action === "labeled" && !(pull.added && wanted(pull.added)))
      return no(`the label added (${pull.added ?? "none"}) is not one of labels ${list(filters.labels)}`);
    if (pull.action !== "labeled" && !pull.labels.some(wanted))
      return no(`#${pull.number} carries none of labels ${list(filters.labels)}`);
  }
  if (filters.paths || filters.pathsIgnore) {
    if (!files) return { needsFiles: true };
    const which = filters.paths
      ? `paths ${list(filters.paths)}`
      : `paths_ignore ${list(filters.pathsIgnore!)}`;
    if ("unknown" in files)
      return no(`its changed files could not be read (${files.unknown}), so ${which} cannot be judged`);
    // past GitHub's 3,000 listed files the rest are unseen, and one of them could match
    if (!files.complete) return { fires: true };
    if (filters.paths && !files.files.some((file) => globsMatch(file, filters.paths!)))
      return no(`no changed file matches ${which}`);
    if (filters.pathsIgnore && files.files.every((file) => globsMatch(file, filters.pathsIgnore!)))
      return no(`every changed file matches ${which}`);
  }
  return { fires: true };
}

/** What filters leave of the pipelines an event matched. */
export interface Filtered {
  fired: Pipeline[];
  /** the pipelines every matching entry of which filtered the event out, and why (the first entry's reason) */
  filtered: { pipeline: string; why: string }[];
  /** pipelines whose `paths`/`paths_ignore` wait on the changed files (none once `files` is given) */
  needFiles: Pipeline[];
}

/**
 * Filters the pipelines `matchPipelines` returned for a code-host event. A pipeline fires when one of
 * its entries naming the event lets it through; one matched by a command or reply entry alone, or by
 * a non-GitHub event, is not filtered. Every other pipeline of GitHub's pull request events meets at
 * least the default `drafts: false`.
 */
export function filterPipelines(
  pipelines: Pipeline[],
  trigger: { kind: string; eventName: string; repo: string; codeUnchanged?: boolean },
  pull: PullFacts | null,
  files?: ChangedFiles,
): Filtered {
  const out: Filtered = { fired: [], filtered: [], needFiles: [] };
  for (const pipeline of pipelines) {
    const entries =
      trigger.kind !== "codehost" || !pull
        ? []
        : (pipeline.trigger?.codehost ?? []).filter(
            (m) =>
              m.command === undefined &&
              !m.replies &&
              namesEvent(m, trigger.eventName, trigger.codeUnchanged) &&
              (m.repos.length === 0 || m.repos.includes(trigger.repo)),
          );
    if (entries.length === 0) {
      out.fired.push(pipeline);
      continue;
    }
    const verdicts = entries.map((m) => judge(m.filters ?? {}, pull!, files));
    const refused = verdicts.find((v): v is { fires: false; why: string } => "fires" in v && !v.fires);
    if (verdicts.some((v) => "fires" in v && v.fires)) out.fired.push(pipeline);
    else if (verdicts.some((v) => "needsFiles" in v)) out.needFiles.push(pipeline);
    else out.filtered.push({ pipeline: pipeline.name, why: refused!.why });
  }
  return out;
}

/** The trigger's diagnostic when filters left nothing to fire: each pipeline and the filter that held it. */
export function filteredMessage(filtered: Filtered["filtered"]): string {
  return filtered.map((f) => `pipeline ${f.pipeline}: ${f.why}`).join("; ");
}
