import type { Target } from "../config/types.ts";
import type { Logger } from "../logger.ts";
import { chatCompletion, isTimeout, replyText } from "../models/chat.ts";
import type { EndpointCooldowns } from "../models/endpoint-cooldowns.ts";

/**
 * How long one run or one ask waits for its query rewrite, over all its rewrite targets together
 * (DNS look-up and connection included). A rewrite only sharpens retrieval, which the original text
 * does too: a run must not hold its slot for a model that is slow or cannot be reached.
 */
export const REWRITE_BOUND_MS = 1_500;

export interface RewriteDeps {
  targets: Readonly<Record<string, Target>>;
  /** the credential value, or undefined when it is unknown or not usable (dead, cooling) */
  keyOf: (target: string, credential: string) => string | undefined;
  /** which targets this process found unreachable: skipped while they cool down */
  endpoints: EndpointCooldowns;
  logger: Logger;
}

const INSTRUCTION =
  "Rewrite the text below into a short keyword search query for a team's document index. " +
  "Answer with the query only: a few distinctive words, no punctuation, no explanation.";

/**
 * `knowledge.retrieval.rewrite.targets`: the targets in order (openai runtime; an agent CLI is
 * too slow for this), the first answer wins, all within REWRITE_BOUND_MS; a target that is cooling
 * down after a network failure or a time-out is skipped. When every target fails, is skipped or the
 * bound passes, the original text is the query.
 */
export async function rewriteQuery(
  text: string,
  targetNames: readonly string[],
  deps: RewriteDeps,
): Promise<{ query: string; target?: string }> {
  const deadline = Date.now() + REWRITE_BOUND_MS;
  for (const name of targetNames) {
    const target = deps.targets[name];
    if (target?.runtime !== "openai") continue;
    const credential = target.credentials.find((c) => deps.keyOf(name, c.name) !== undefined);
    if (target.credentials.length > 0 && !credential) continue;
    const left = deadline - Date.now();
    if (left <= 0) break;
    const admission = deps.endpoints.admit(name);
    if (admission.kind === "skip") {
      if (deps.logger.isLevelEnabled("debug"))
        deps.logger.debug(`knowledge: query rewrite skips target ${name}: ${admission.reason}`, {
          event: "knowledge.rewrite_skipped",
          target: name,
        });
      continue;
    }
    const timeoutMs = Math.min(target.timeoutMs, left);
    let response: Awaited<ReturnType<typeof chatCompletion>>;
    try {
      response = await chatCompletion({
        baseUrl: target.baseUrl,
        model: target.model,
        key: credential ? deps.keyOf(name, credential.name) : undefined,
        messages: [
          { role: "system", content: INSTRUCTION },
          { role: "user", content: text.slice(0, 8_000) },
        ],
        timeoutMs,
      });
    } catch (error) {
      // no answer at all (got throws only for the transport: DNS, connection, time-out)
      const code = (error as { code?: string }).code ?? (error as Error).message;
      // a time-out counts against the target only when its call had (nearly) all the time a rewrite
      // gives it: one cut short because earlier targets spent the bound says nothing about this one
      const cutShort = isTimeout(error) && timeoutMs < 0.9 * Math.min(target.timeoutMs, REWRITE_BOUND_MS);
      let cooling: { coolingMs: number } | undefined;
      if (cutShort) admission.release();
      else cooling = admission.down(code);
      deps.logger.warn(
        `knowledge: query rewrite on target ${name} failed (${code})${cooling ? `; skipping it for ${cooling.coolingMs / 1000} s` : ""}`,
        { event: "knowledge.rewrite_failed", target: name, error: code, probe: admission.probe },
      );
      continue;
    }
    // any status is an answer: the target is reachable, whatever it thought of the request
    admission.up();
    const query = response.status < 300 ? replyText(response.body)?.trim().split("\n")[0] : undefined;
    if (query) return { query: query.slice(0, 500), target: name };
    deps.logger.warn(`knowledge: query rewrite on target ${name} answered HTTP ${response.status}`, {
      event: "knowledge.rewrite_failed",
      target: name,
      status: response.status,
    });
  }
  return { query: text };
}
