import { botName } from "../../shared/config/authors.ts";
import type { AuthorAssociation, ConfigSnapshot, Pipeline } from "../../shared/config/types.ts";
import { association } from "./authors.ts";
import type { ResolvedEvent } from "./resolve.ts";

/** A comment command on a pull (merge) request: `@<bot> <word> <args...>` at the start of the comment. */
export interface CommentCommand {
  word: string;
  /** the rest of the command's line, trimmed: the run's COMMAND_ARGS */
  args: string;
  /** the commenter's association (GitLab: as dispatch established it from the members API) */
  author: AuthorAssociation;
  login: string | null;
  /** the pull request the comment is on */
  repo: string;
  number: number;
  /** the comment's (GitLab: the note's) id, for the reaction that answers it */
  commentId: number | null;
}

type Json = Record<string, unknown>;

function obj(value: unknown): Json | undefined {
  return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Json) : undefined;
}

/**
 * The command a comment gives `bot`, or null when the event is not one (not a comment, not on a
 * pull request, not addressed to it). `established`: a GitLab commenter's association, which its
 * payload does not carry (worker/queue/gitlab-author.ts); without it the commenter is `none`.
 */
export function readCommand(
  eventName: string,
  payload: unknown,
  bot: string,
  established?: AuthorAssociation,
): CommentCommand | null {
  const body = obj(payload) ?? {};
  const repo = obj(body.repository)?.full_name;
  if (eventName === "issue_comment.created") {
    const comment = obj(body.comment);
    const issue = obj(body.issue);
    // an issue_comment is on a pull request only when its issue carries `pull_request`
    if (!comment || !issue || !obj(issue.pull_request)) return null;
    const parsed = parseLine(comment.body, bot);
    if (!parsed || typeof repo !== "string" || typeof issue.number !== "number") return null;
    return {
      ...parsed,
      author: association(comment.author_association),
      login: typeof obj(comment.user)?.login === "string" ? String(obj(comment.user)?.login) : null,
      repo,
      number: issue.number,
      commentId: typeof comment.id === "number" ? comment.id : null,
    };
  }
  if (eventName === "note" || body.object_kind === "note") {
    const note = obj(body.object_attributes);
    const merge = obj(body.merge_request);
    const project = obj(body.project)?.path_with_namespace;
    if (note?.noteable_type !== "MergeRequest" || !merge) return null;
    // an edited note (GitLab 16.11+ sends `action: update`) is no new command, as GitHub's
    // issue_comment.edited is not: fixing a typo must not run the pipeline again
    if (note.action === "update") return null;
    const parsed = parseLine(note.note, bot);
    if (!parsed || typeof project !== "string" || typeof merge.iid !== "number") return null;
    const user = obj(body.user);
    return {
      ...parsed,
      author: established ?? "none",
      login: typeof user?.username === "string" ? user.username : null,
      repo: project,
      number: merge.iid,
      commentId: typeof note.id === "number" ? note.id : null,
    };
  }
  return null;
}

function parseLine(text: unknown, bot: string): { word: string; args: string } | null {
  if (typeof text !== "string") return null;
  const line = text.trimStart().split(/\r?\n/, 1)[0] ?? "";
  const prefix = `@${bot}`.toLowerCase();
  if (!line.toLowerCase().startsWith(prefix)) return null;
  const rest = line.slice(prefix.length);
  // `@svc-bot` is not `@svc`: the mention must end at whitespace
  if (rest !== "" && !/^\s/.test(rest)) return null;
  const match = /^\s+([A-Za-z][A-Za-z0-9_-]*)(?:\s+(.*))?$/.exec(rest);
  if (!match) return null;
  return { word: match[1]!.toLowerCase(), args: (match[2] ?? "").trim() };
}

/** The run's event with the comment command that fired its pipeline, when one did. */
export function withCommand(
  event: ResolvedEvent,
  config: Pick<ConfigSnapshot, "codehost">,
  pipeline: Pick<Pipeline, "trigger">,
): ResolvedEvent {
  if (event.kind !== "codehost") return event;
  const words = (pipeline.trigger?.codehost ?? []).flatMap((m) => (m.command ? [m.command] : []));
  if (words.length === 0) return event;
  const command = readCommand(event.eventName, event.payload, botName(config), event.author);
  if (!command || !words.includes(command.word)) return event;
  return { ...event, command: { word: command.word, args: command.args } };
}
