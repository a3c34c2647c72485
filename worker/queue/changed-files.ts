import { pullRequestFiles } from "../../shared/codehost/github-reads.ts";
import { type ChangedFiles, filterPipelines, pullFacts } from "../event/filters.ts";
import { codeUnchanged } from "../event/match.ts";
import type { ResolvedEvent } from "../event/resolve.ts";
import { pipelinesFor } from "./dispatch-match.ts";
import { failure, readerFor } from "./github-facts.ts";
import type { AuthorDeps } from "./gitlab-author.ts";

/**
 * The files a GitHub pull request changes, read at dispatch for the `paths` / `paths_ignore` trigger
 * filters (worker/event/filters.ts), as the default code-host identity (`codehost.app`'s
 * installation, else `codehost.token`). Asked only when a pipeline the event matched has such a
 * filter and its other filters (draft, branch, labels) let the event through; undefined otherwise.
 * An unanswered read is `{ unknown }`: the filtered pipelines do not fire, and their trigger says why.
 *
 * Not kept on the trigger: the answer decides the dispatch alone, which either creates the runs or
 * completes the trigger; a replay reads the files anew, as the pull request is then.
 */
export async function changedFilesFor(
  deps: AuthorDeps,
  event: ResolvedEvent,
  evalRun: boolean,
): Promise<ChangedFiles | undefined> {
  const pull = pullFacts(event.eventName, event.payload);
  if (!pull || event.kind !== "codehost") return undefined;
  const { needFiles } = filterPipelines(
    pipelinesFor(deps.config, event, evalRun),
    {
      kind: event.kind,
      eventName: event.eventName,
      repo: event.context.repo,
      codeUnchanged: codeUnchanged(event.eventName, event.payload),
    },
    pull,
  );
  if (needFiles.length === 0) return undefined;
  const repo = event.context.repo;
  const reader = await readerFor(deps, repo);
  let why: string;
  if (typeof reader === "string") why = reader;
  else {
    try {
      return await pullRequestFiles(reader.client, repo, pull.number);
    } catch (error) {
      why = failure(error);
    }
  }
  deps.logger.warn("a pull request's changed files could not be read: its paths filters hold it", {
    event: "github.changed_files_unknown",
    repo,
    number: pull.number,
    pipelines: needFiles.map((p) => p.name),
    why,
  });
  return { unknown: why };
}
