import type { SecretSource } from "../../shared/config/secret-source.ts";
import type { VerifyKind, WebhookSource } from "../../shared/config/types.ts";
import { tokenDigest } from "./bearer.ts";

export interface ReadySource {
  name: string;
  verify: VerifyKind;
  /** the shared secret (HMAC key, or the bearer token) */
  secret: string;
  /** SHA-256 of the bearer token, computed once at start-up */
  digest: Buffer;
}

export interface SourceTable {
  /** undefined for a name without a source; a Map, so `constructor` or `__proto__` are just unknown names */
  byName(name: string): ReadySource | undefined;
  /** the source `POST /events` serves: the one whose `verify` is `codehost` */
  codehost: ReadySource | undefined;
}

export function buildSourceTable(
  sources: Record<string, WebhookSource>,
  resolveSecret: (source: SecretSource) => string,
): SourceTable {
  const table = new Map<string, ReadySource>();
  for (const [name, source] of Object.entries(sources)) {
    const secret = resolveSecret(source.secret);
    table.set(name, { name, verify: source.verify, secret, digest: tokenDigest(secret) });
  }
  const codehost = [...table.values()].filter((source) => source.verify === "codehost");
  codehost.sort((a, b) => a.name.localeCompare(b.name));
  return { byName: (name) => table.get(name), codehost: codehost[0] };
}
