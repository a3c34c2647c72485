import { findSchedule } from "../../shared/config/schedule.ts";
import type { ConfigSnapshot, EventMatcher, Pipeline } from "../../shared/config/types.ts";
import { namesEvent } from "./filters.ts";

/** The trigger fields that decide which pipelines fire. */
export interface TriggerIdentity {
  kind: string;
  source: string;
  eventName: string;
  repo: string;
  /** an eval run's replay (`POST /evals/run`) */
  evalRun?: boolean;
  /** the word of the comment command the event carries (worker/event/command.ts) */
  command?: string;
  /** the event changed no code (see codeUnchanged): only a matcher naming its exact event fires */
  codeUnchanged?: boolean;
  /** the event is a reply in a review thread, not svc's own (worker/event/reply.ts readReply) */
  reply?: boolean;
}

/**
 * A GitLab `merge_request.update` without `oldrev` changed the title, labels, assignees or the
 * like, not the code: GitLab sends it for every such edit, and a pipeline that reviews code on
 * `merge_request` (every action) would review the same commit again on each. It fires only the
 * pipelines that name `merge_request.update` itself.
 */
export function codeUnchanged(eventName: string, payload: unknown): boolean {
  if (eventName !== "merge_request.update") return false;
  const body = (payload ?? {}) as { object_kind?: unknown; object_attributes?: { oldrev?: unknown } };
  return body.object_kind === "merge_request" && !body.object_attributes?.oldrev;
}

function matches(
  matchers: EventMatcher[],
  eventName: string,
  repo: string,
  command?: string,
  exact = false,
  reply = false,
): boolean {
  return matchers.some(
    (matcher) =>
      // a command matcher answers its word only, never the comment event as such
      (matcher.command === undefined || matcher.command === command) &&
      // a replies matcher answers replies only, never svc's own nor a thread's first comment
      (!matcher.replies || reply) &&
      // with the events its filters imply (ready_for_review, labeled); the filters are judged later
      namesEvent(matcher, eventName, exact) &&
      (matcher.repos.length === 0 || matcher.repos.includes(repo)),
  );
}

/**
 * Pipelines a trigger fires, in name order:
 * - `webhook`: those whose `trigger.webhook` lists the route name;
 * - `codehost` / `tracker`: those whose matcher lists the event name (`pull_request.opened`) or its
 *   bare event (`pull_request` matches every action), narrowed to `repos` when a matcher names any;
 *   an event that changed no code (codeUnchanged) only by its exact name;
 *   a `{ command }` matcher only when the event is that comment command; a `{ replies }` matcher
 *   only when it is a reply in a review thread by anyone but svc (`reply`);
 *   a filtered entry also answers the events its filters imply (worker/event/filters.ts), its
 *   filters judged by admission, so what this returns is all a trigger could fire;
 * - `manual`: the pipeline named by `source`, triggered or not;
 * - `schedule`: the pipeline of the schedule named by `source` (`<pipeline>`, `<pipeline>-2` …);
 * - `replay` of an eval run: the pipeline named by `source`, whatever else the event would fire
 *   (a replay of a trigger was resolved to the original's kind before matching).
 */
export function matchPipelines(
  config: Pick<ConfigSnapshot, "pipelines">,
  trigger: TriggerIdentity,
): Pipeline[] {
  const all = Object.values(config.pipelines).sort((a, b) => a.name.localeCompare(b.name));
  switch (trigger.kind) {
    case "webhook":
      return all.filter((p) => p.trigger?.webhook.includes(trigger.source));
    case "codehost":
      return all.filter(
        (p) =>
          p.trigger &&
          matches(
            p.trigger.codehost,
            trigger.eventName,
            trigger.repo,
            trigger.command,
            trigger.codeUnchanged,
            trigger.reply,
          ),
      );
    case "tracker":
      return all.filter((p) => p.trigger && matches(p.trigger.tracker, trigger.eventName, trigger.repo));
    case "manual":
    case "schedule": {
      const scheduled =
        trigger.kind === "schedule" ? findSchedule(config.pipelines, trigger.source) : undefined;
      const pipeline = config.pipelines[scheduled?.pipeline ?? trigger.source];
      return pipeline ? [pipeline] : [];
    }
    case "replay": {
      const pipeline = trigger.evalRun ? config.pipelines[trigger.source] : undefined;
      return pipeline ? [pipeline] : [];
    }
    default:
      return [];
  }
}
