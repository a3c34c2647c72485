import type { ConfigSnapshot, Pipeline } from "../../shared/config/types.ts";
import type { ResolvedEvent } from "../event/resolve.ts";

/**
 * A pipeline's own identity on the code host is the `members.yaml` handle of its agent (the
 * member named like the pipeline's agent). Events that identity authored — its own review, its
 * own comment — are not answered, so a pipeline never reviews itself or loops on its output.
 */
export function ownHandle(config: Pick<ConfigSnapshot, "members">, pipeline: Pipeline): string | undefined {
  if (!pipeline.agent) return undefined;
  return config.members.find((member) => member.name === pipeline.agent)?.identities.codehost?.handle;
}

export function eventAuthor(event: ResolvedEvent): string | undefined {
  if (event.kind !== "codehost") return undefined;
  const sender = (event.payload as { sender?: { login?: unknown } } | null)?.sender;
  return typeof sender?.login === "string" ? sender.login : undefined;
}

export function isOwnEvent(
  config: Pick<ConfigSnapshot, "members">,
  pipeline: Pipeline,
  event: ResolvedEvent,
): boolean {
  const own = ownHandle(config, pipeline);
  const author = eventAuthor(event);
  return own !== undefined && author !== undefined && own.toLowerCase() === author.toLowerCase();
}
