import type { ConfigSnapshot, Pipeline } from "../../shared/config/types.ts";
import { type Diagnostic, diagnostic } from "../../shared/diagnostics.ts";
import type { EventContext } from "../event/context.ts";
import { codeUnchanged, matchPipelines } from "../event/match.ts";
import { readReply } from "../event/reply.ts";
import { type ResolvedEvent, runIdentity } from "../event/resolve.ts";

/** What a trigger fires, and why it fires nothing: read by dispatch before it creates a run. */

/** The first agent or skill the event or its pipelines name that the configuration lacks. */
export function unknownReference(
  config: Readonly<ConfigSnapshot>,
  pipelines: Pipeline[],
  context: EventContext,
): Diagnostic | null {
  if (context.agent && !config.agents[context.agent]) {
    return diagnostic(
      "unknown_agent_reference",
      `the event names agent "${context.agent}", which is not configured`,
      {
        field: "agent",
      },
    );
  }
  if (context.skill && !config.skills[context.skill]) {
    return diagnostic(
      "unknown_agent_reference",
      `the event names skill "${context.skill}", which is not configured`,
      {
        field: "skill",
      },
    );
  }
  for (const pipeline of pipelines) {
    const { agent, skill } = runIdentity(pipeline, context);
    if (agent && !config.agents[agent]) {
      return diagnostic(
        "unknown_agent_reference",
        `pipeline ${pipeline.name} runs agent "${agent}", which is not configured`,
        {
          field: "agent",
        },
      );
    }
    for (const name of [skill, ...pipeline.companions]) {
      if (name && !config.skills[name]) {
        return diagnostic(
          "unknown_agent_reference",
          `pipeline ${pipeline.name} uses skill "${name}", which is not configured`,
          {
            field: "skill",
          },
        );
      }
    }
  }
  return null;
}

/** The pipelines an event fires; an agent-session event addresses one agent, so only its pipelines answer. */
export function pipelinesFor(
  config: Readonly<ConfigSnapshot>,
  event: ResolvedEvent,
  evalRun: boolean,
): Pipeline[] {
  const pipelines = matchPipelines(config, {
    kind: event.kind,
    source: event.source,
    eventName: event.eventName,
    repo: event.context.repo,
    evalRun,
    codeUnchanged: codeUnchanged(event.eventName, event.payload),
    reply: readReply(event.eventName, event.payload) !== null,
  });
  if (event.kind === "tracker" && event.context.agent)
    return pipelines.filter((pipeline) => pipeline.agent === event.context.agent);
  return pipelines;
}

export function noMatch(event: ResolvedEvent): Diagnostic {
  const what = event.kind === "webhook" ? `route ${event.source}` : `event ${event.eventName}`;
  return diagnostic("no_matching_pipeline", `no pipeline is fired by ${event.kind} ${what}`);
}
