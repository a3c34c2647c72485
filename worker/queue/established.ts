import { eventContext } from "../event/context.ts";
import type { EstablishedAuthor, ResolvedEvent } from "../event/resolve.ts";

/**
 * What dispatch's code-host lookups (gitlab-author.ts, github-facts.ts) share: answers cached for a
 * minute per question, so a busy pull request's pushes and comments ask once, and the event judged
 * again with what they established.
 */
const TTL_MS = 60_000;

export class AnswerCache<T> {
  readonly #answers = new Map<string, { value: T; at: number }>();

  async get(key: string, ask: () => Promise<T>): Promise<T> {
    const cached = this.#answers.get(key);
    if (cached && Date.now() - cached.at < TTL_MS) return cached.value;
    const value = await ask();
    this.#answers.set(key, { value, at: Date.now() });
    return value;
  }
}

/** The event with its established author or head, its context judged again (agent and skill kept). */
export function withEstablished(
  event: ResolvedEvent,
  established: { author?: EstablishedAuthor; head?: ResolvedEvent["head"] },
): ResolvedEvent {
  const author = established.author ?? event.author;
  const head = established.head ?? event.head;
  const context = eventContext(event.kind, event.payload, author, head ? { head } : {});
  if (event.context.agent) context.agent = event.context.agent;
  if (event.context.skill) context.skill = event.context.skill;
  return { ...event, ...(author ? { author } : {}), ...(head ? { head } : {}), context };
}
