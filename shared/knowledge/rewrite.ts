import type { Target } from "../config/types.ts";
import type { Logger } from "../logger.ts";
import { chatCompletion, replyText } from "../models/chat.ts";

/** A rewrite is one short chat call: a slow model must not hold up a run or an ask. */
export const REWRITE_TIMEOUT_MS = 5_000;

export interface RewriteDeps {
  targets: Readonly<Record<string, Target>>;
  /** the credential value, or undefined when it is unknown or not usable (dead, cooling) */
  keyOf: (target: string, credential: string) => string | undefined;
  logger: Logger;
}

const INSTRUCTION =
  "Rewrite the text below into a short keyword search query for a team's document index. " +
  "Answer with the query only: a few distinctive words, no punctuation, no explanation.";

/**
 * `knowledge.retrieval.rewrite.targets`: the targets in order (openai runtime; an agent CLI is
 * too slow for this), the first answer wins; when every target fails the original text is the query.
 */
export async function rewriteQuery(
  text: string,
  targetNames: readonly string[],
  deps: RewriteDeps,
): Promise<{ query: string; target?: string }> {
  for (const name of targetNames) {
    const target = deps.targets[name];
    if (target?.runtime !== "openai") continue;
    const credential = target.credentials.find((c) => deps.keyOf(name, c.name) !== undefined);
    if (target.credentials.length > 0 && !credential) continue;
    try {
      const response = await chatCompletion({
        baseUrl: target.baseUrl,
        model: target.model,
        key: credential ? deps.keyOf(name, credential.name) : undefined,
        messages: [
          { role: "system", content: INSTRUCTION },
          { role: "user", content: text.slice(0, 8_000) },
        ],
        timeoutMs: Math.min(target.timeoutMs, REWRITE_TIMEOUT_MS),
      });
      const query = response.status < 300 ? replyText(response.body)?.trim().split("\n")[0] : undefined;
      if (query) return { query: query.slice(0, 500), target: name };
      deps.logger.warn(`knowledge: query rewrite on target ${name} answered HTTP ${response.status}`, {
        event: "knowledge.rewrite_failed",
        target: name,
        status: response.status,
      });
    } catch (error) {
      deps.logger.warn(`knowledge: query rewrite on target ${name} failed`, {
        event: "knowledge.rewrite_failed",
        target: name,
        error: (error as { code?: string }).code ?? (error as Error).message,
      });
    }
  }
  return { query: text };
}
