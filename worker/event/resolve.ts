import type pg from "pg";
import type { TriggerEvent } from "../../db/invocations.ts";
import { getTriggerEvent } from "../../db/trigger-status.ts";
import type { PullHead } from "../../shared/codehost/github-reads.ts";
import type { Pipeline } from "../../shared/config/types.ts";
import { type EventContext, eventContext } from "./context.ts";

/** What a trigger means once a replay is resolved to the trigger it replays. */
export interface ResolvedEvent {
  kind: string;
  source: string;
  eventName: string;
  payload: unknown;
  context: EventContext;
  /** the comment command that fired this run's pipeline (worker/event/command.ts, withCommand) */
  command?: { word: string; args: string };
  /**
   * The author's association as svc established it where the payload cannot say, at dispatch
   * (GitLab: the members API; GitHub: the sender's repository permission, for an event with no
   * `author_association`); absent when the payload states it or nobody could say.
   */
  author?: EstablishedAuthor;
  /** the head and base of the pull request a comment is on, as dispatch read them from GitHub */
  head?: PullHead;
}

export type EstablishedAuthor = "owner" | "member" | "none";

function isEmptyObject(value: unknown): boolean {
  return value !== null && typeof value === "object" && Object.keys(value as object).length === 0;
}

/** A replay runs as its original did: the original's kind, source and event name (and payload unless it sent one). */
export async function resolveEvent(
  db: pg.Pool | pg.ClientBase,
  trigger: {
    kind: string;
    source: string;
    event_name?: string;
    eventName?: string;
    payload: unknown;
    replay_of?: string | null;
    replayOf?: string | null;
    author_association?: EstablishedAuthor | null;
    authorAssociation?: EstablishedAuthor | null;
    pull_head?: PullHead | null;
  },
): Promise<ResolvedEvent> {
  let kind = trigger.kind;
  let source = trigger.source;
  let eventName = trigger.event_name ?? trigger.eventName ?? "";
  let payload = trigger.payload;
  const replayOf = trigger.replay_of ?? trigger.replayOf;
  let author = trigger.author_association ?? trigger.authorAssociation ?? undefined;
  let head = trigger.pull_head ?? undefined;
  if (kind === "replay" && replayOf) {
    const original = await getTriggerEvent(db, replayOf);
    if (original) {
      kind = original.kind;
      source = original.source;
      eventName = original.event_name;
      // a replay's author and head are the original event's, as its dispatch established them;
      // the replay's own dispatch establishes them only when the original's could not
      author = original.author_association ?? author;
      head = original.pull_head ?? head;
      if (payload === null || payload === undefined || isEmptyObject(payload)) payload = original.payload;
    }
  }
  // a replayed manual fire still names its agent or skill in the payload; its author is judged as
  // the original's channel delivered it
  const context = eventContext(
    trigger.kind === "replay" && kind !== "tracker" ? "replay" : kind,
    payload,
    author,
    { channel: kind, ...(head ? { head } : {}) },
  );
  return {
    kind,
    source,
    eventName,
    payload,
    context,
    ...(author ? { author } : {}),
    ...(head ? { head } : {}),
  };
}

/** The agent and skill a pipeline runs with for this event: a fire request may name its own. */
export function runIdentity(pipeline: Pipeline, context: EventContext): { agent?: string; skill?: string } {
  return { agent: context.agent ?? pipeline.agent, skill: context.skill ?? pipeline.skill };
}

/**
 * The event a run answers: as dispatch resolved it, or resolved from the trigger the lane claim read,
 * or (neither given: an orchestrated task) read here. A run without a trigger (fired by the API
 * without one) answers a manual event named after its pipeline.
 */
export async function eventOfRun(
  db: pg.Pool,
  run: {
    event?: ResolvedEvent;
    trigger?: TriggerEvent | null;
    workload: { trigger_id: string | null };
    pipeline: Pick<Pipeline, "name">;
  },
): Promise<ResolvedEvent> {
  if (run.event) return run.event;
  const trigger =
    run.trigger !== undefined
      ? run.trigger
      : run.workload.trigger_id
        ? await getTriggerEvent(db, run.workload.trigger_id)
        : undefined;
  if (trigger) return resolveEvent(db, trigger);
  return {
    kind: "manual",
    source: run.pipeline.name,
    eventName: run.pipeline.name,
    payload: {},
    // fired through the API without a trigger: by an operator, not a stranger
    context: { repo: "", sha: "", branch: "", outsider: false },
  };
}
