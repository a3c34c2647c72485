import type pg from "pg";
import { isPullRequestPaused, pausePullRequest, resumePullRequest } from "../../db/paused-pull-requests.ts";
import { botName, DEFAULT_COMMANDS_FROM } from "../../shared/config/authors.ts";
import type { ConfigSnapshot, Pipeline } from "../../shared/config/types.ts";
import { type Diagnostic, diagnostic } from "../../shared/diagnostics.ts";
import { readCommand } from "../event/command.ts";
import { type ChangedFiles, filteredMessage, filterPipelines, pullFacts } from "../event/filters.ts";
import { gatePipelines } from "../event/gates.ts";
import { codeUnchanged, matchPipelines } from "../event/match.ts";
import { readReply } from "../event/reply.ts";
import type { ResolvedEvent } from "../event/resolve.ts";
import type { CommandReaction } from "../outputs/reactions.ts";

/** What dispatch may run for an event, after comment commands, pauses and author gates. */
export type Admission =
  | { kind: "run"; pipelines: Pipeline[]; gated: Gated | null; reaction: CommandReaction | null }
  | { kind: "stop"; diagnostic: Diagnostic; gated: Gated | null; reaction: CommandReaction | null };

/** Pipelines the event matched but its author may not start, and the gate that said so. */
export interface Gated {
  pipelines: string[];
  gate: "author_not_allowed";
}

/**
 * Decides, in the dispatch transaction, what an event may start:
 * - a comment command (`@<bot> <word>`) from an association outside `codehost.commands_from` starts
 *   nothing (`command_not_allowed`); `pause` / `resume` are answered here; another word runs the
 *   pipelines that take it, whether or not the pull request is paused;
 * - pull request filters of `trigger.codehost` entries (worker/event/filters.ts) drop the pipelines
 *   they hold; with none left but some held, `filtered`, naming each pipeline and its filter;
 * - any other event of a paused pull request starts nothing (`paused`);
 * - the rest go through the author gates (worker/event/gates.ts); with nothing left, `author_not_allowed`.
 */
export async function admit(
  config: Readonly<ConfigSnapshot>,
  client: pg.ClientBase,
  event: ResolvedEvent,
  evalRun: boolean,
  /** the pull request's changed files, when a `paths` filter needed them (worker/queue/changed-files.ts) */
  files?: ChangedFiles,
): Promise<Admission> {
  const command =
    event.kind === "codehost"
      ? readCommand(event.eventName, event.payload, botName(config), event.author)
      : null;
  const identity = {
    kind: event.kind,
    source: event.source,
    eventName: event.eventName,
    repo: event.context.repo,
    evalRun,
    codeUnchanged: codeUnchanged(event.eventName, event.payload),
    reply: readReply(event.eventName, event.payload) !== null,
  };
  if (command) {
    const react = (content: CommandReaction["content"]) =>
      command.commentId === null
        ? null
        : { repo: command.repo, number: command.number, commentId: command.commentId, content };
    const from = config.codehost?.commandsFrom ?? DEFAULT_COMMANDS_FROM;
    if (!from.includes(command.author))
      return stop(
        diagnostic(
          "command_not_allowed",
          `command "${command.word}" by ${command.login ?? "an unknown author"} (${command.author}) is not taken: codehost.commands_from takes commands from ${from.join(", ")}`,
        ),
        react("-1"),
      );
    const where = `${command.repo}#${command.number}`;
    if (command.word === "pause" || command.word === "resume") {
      if (command.word === "pause")
        await pausePullRequest(client, command.repo, command.number, command.login);
      else await resumePullRequest(client, command.repo, command.number);
      const done =
        command.word === "pause"
          ? diagnostic("paused", `automatic runs of ${where} are paused until "@${botName(config)} resume"`)
          : diagnostic("resumed", `automatic runs of ${where} are resumed`);
      return stop(done, react("eyes"));
    }
    // only the pipelines of its word answer a command: a pipeline on every comment would otherwise
    // run past the author gates and the pause on the strength of the commenter being trusted
    const matched = matchPipelines(config, { ...identity, command: command.word }).filter((p) =>
      p.trigger?.codehost.some((m) => m.command === command.word),
    );
    // `authors`, when a command pipeline sets it, is judged on the commenter
    const pipelines = matched.filter((p) => !p.authors || p.authors.includes(command.author));
    if (pipelines.length === 0)
      return stop(
        diagnostic(
          matched.length ? "author_not_allowed" : "no_matching_pipeline",
          matched.length
            ? `command "${command.word}" by ${command.author} is not taken: the pipelines of "${command.word}" (${matched.map((p) => p.name).join(", ")}) list other authors`
            : `no pipeline takes the command "${command.word}"`,
        ),
        react("-1"),
      );
    return { kind: "run", pipelines, gated: null, reaction: react("eyes") };
  }
  const matched = matchPipelines(config, identity);
  // a filter that needed the files and got none holds its pipeline: dispatch read them if any did
  const { fired, filtered } = filterPipelines(
    matched,
    identity,
    pullFacts(event.eventName, event.payload),
    files ?? { unknown: "not read" },
  );
  if (fired.length === 0 && filtered.length)
    return stop({ code: "filtered", message: filteredMessage(filtered) }, null);
  const pipelines =
    event.kind === "tracker" && event.context.agent
      ? fired.filter((pipeline) => pipeline.agent === event.context.agent)
      : fired;
  if (pipelines.length === 0 || !gatedKinds.has(event.kind))
    return { kind: "run", pipelines, gated: null, reaction: null };
  if (event.kind === "codehost") {
    const pull = pullOf(event);
    if (pull && (await isPullRequestPaused(client, pull.repo, pull.number)))
      return stop(
        diagnostic(
          "paused",
          `${pull.repo}#${pull.number} is paused: no automatic run until "@${botName(config)} resume"`,
        ),
        null,
      );
  }
  const { allowed, gated } = gatePipelines(pipelines, event, config.sandboxes);
  const gatedList: Gated | null = gated.length
    ? { pipelines: gated.map((p) => p.name), gate: "author_not_allowed" }
    : null;
  if (allowed.length === 0)
    return {
      kind: "stop",
      diagnostic: diagnostic(
        "author_not_allowed",
        `the event's author may not start ${gatedList?.pipelines.join(", ")}: an outsider's or a fork's pull request starts only pipelines that declare sandbox, or list its author association in authors`,
      ),
      gated: gatedList,
      reaction: null,
    };
  return { kind: "run", pipelines: allowed, gated: gatedList, reaction: null };
}

/** A bearer webhook may relay a stranger's pull request too; manual fires and schedules are the operator's. */
const gatedKinds = new Set(["codehost", "webhook"]);

function stop(d: Diagnostic, reaction: CommandReaction | null): Admission {
  return { kind: "stop", diagnostic: d, gated: null, reaction };
}

function pullOf(event: ResolvedEvent): { repo: string; number: number } | null {
  // a GitLab merge request's iid, as the event model read it (its payloads have no pull_request)
  if (event.context.gitlab)
    return event.context.pull && event.context.number !== undefined && event.context.repo
      ? { repo: event.context.repo, number: event.context.number }
      : null;
  const body = event.payload as Record<string, unknown> | null;
  const pull = body?.pull_request as Record<string, unknown> | undefined;
  const issue = body?.issue as Record<string, unknown> | undefined;
  const number = pull?.number ?? body?.number ?? (issue?.pull_request ? issue.number : undefined);
  return typeof number === "number" && event.context.repo ? { repo: event.context.repo, number } : null;
}
