import { readBreakerLimits } from "../outputs.ts";
import { checkKeys, isMapping, type YamlMap } from "../read.ts";
import type { ConfigFile } from "../source.ts";
import type { DaemonSettings } from "../types.ts";
import { readChatTarget } from "./channels.ts";
import { declaredNames } from "./declared-names.ts";
import { child } from "./read-helpers.ts";

export function readQueue(f: ConfigFile, root: YamlMap): DaemonSettings["queue"] {
  const queue = child(f, root, "queue", []) ?? {};
  checkKeys(f, queue, ["queue"], ["circuit_breaker"]);
  const breaker = child(f, queue, "circuit_breaker", ["queue"]);
  if (!breaker) return {};
  checkKeys(f, breaker, ["queue", "circuit_breaker"], ["escalate", "failures", "cooldown"]);
  const limits = readBreakerLimits(f, breaker);
  const escalate = child(f, breaker, "escalate", ["queue", "circuit_breaker"]);
  if (!escalate) return { circuitBreaker: { ...limits } };
  const path = ["queue", "circuit_breaker", "escalate"];
  checkKeys(f, escalate, path, ["chat"]);
  if (escalate.chat === undefined || escalate.chat === null)
    return { circuitBreaker: { ...limits, escalate: {} } };
  if (!isMapping(escalate.chat)) {
    f.report(
      [...path, "chat"],
      "invalid_type",
      '"queue.circuit_breaker.escalate.chat" must be an object { bot, channel } - a bare channel name is refused; write chat: { bot: <name from channels.chat.bots>, channel: <channel id> }',
    );
    return { circuitBreaker: { ...limits, escalate: {} } };
  }
  const chatTarget = readChatTarget(f, escalate.chat, [...path, "chat"], declaredNames(root).bots);
  return { circuitBreaker: { ...limits, escalate: chatTarget ? { chat: chatTarget } : {} } };
}
