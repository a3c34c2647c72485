import type { IncomingHttpHeaders } from "node:http";
import { classifyResponse, retryAfter } from "../../shared/credentials/classify.ts";
import type { Refusal } from "./account.ts";

/** How the gateway changes a credential's state (worker/credentials/cooldowns.ts). */
export interface CredentialStates {
  markDead(target: string, credential: string, reason: string): Promise<void>;
  markCooling(target: string, credential: string, until: Date, reason: string): Promise<void>;
}

/**
 * What a model API's answer says about the credential that made it, by the contract's credential
 * table, for every runtime alike: 401, 403 or a revoked or expired key → dead; 429 → cooling
 * until Retry-After; an overload (Anthropic's 529 `overloaded_error`, a 503) → cooling too.
 */
export function refusalOf(
  status: number,
  headers: IncomingHttpHeaders,
  text: string,
): (Refusal & { until?: Date }) | undefined {
  if (status < 400) return undefined;
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // an error page, not JSON: the status decides alone
  }
  const verdict = classifyResponse(status, headers, body);
  if (verdict.kind === "dead") return { kind: "dead", reason: verdict.reason };
  if (verdict.kind === "cooling") return { kind: "cooling", reason: verdict.reason, until: verdict.until };
  if (status === 529 || status === 503 || /overloaded/i.test(text)) {
    const header = headers["retry-after"];
    const until = retryAfter(Array.isArray(header) ? header[0] : header, new Date());
    return { kind: "cooling", reason: `overloaded (HTTP ${status})`, until };
  }
  return undefined;
}
