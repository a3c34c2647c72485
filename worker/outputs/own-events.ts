import { botName } from "../../shared/config/authors.ts";
import type { ConfigSnapshot, Pipeline } from "../../shared/config/types.ts";
import type { ResolvedEvent } from "../event/resolve.ts";

/**
 * A pipeline's own identity on the code host is the `members.yaml` handle of its agent (the
 * member named like the pipeline's agent). Events that identity authored — its own review, its
 * own comment — are not answered, so a pipeline never reviews itself or loops on its output. On
 * GitLab, svc's own user (the token's, whose username is the bot name) is one too: every note svc
 * posts comes back as a `note` event, and a pipeline on `note` would otherwise answer itself.
 */
export function ownHandle(config: Pick<ConfigSnapshot, "members">, pipeline: Pipeline): string | undefined {
  if (!pipeline.agent) return undefined;
  return config.members.find((member) => member.name === pipeline.agent)?.identities.codehost?.handle;
}

/** Who sent a code-host event: GitHub's `sender.login`, GitLab's `user.username`. */
export function eventAuthor(event: ResolvedEvent): string | undefined {
  if (event.kind !== "codehost") return undefined;
  const payload = event.payload as { sender?: { login?: unknown }; user?: { username?: unknown } } | null;
  const login = event.context.gitlab ? payload?.user?.username : payload?.sender?.login;
  return typeof login === "string" ? login : undefined;
}

export function isOwnEvent(
  config: Pick<ConfigSnapshot, "members" | "codehost">,
  pipeline: Pipeline,
  event: ResolvedEvent,
): boolean {
  const author = eventAuthor(event)?.toLowerCase();
  if (author === undefined) return false;
  if (ownHandle(config, pipeline)?.toLowerCase() === author) return true;
  return event.context.gitlab === true && botName(config).toLowerCase() === author;
}
