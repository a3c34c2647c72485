import type { SecretSource } from "../../shared/config/secret-source.ts";
import { SIGNING_SECRET_SHAPE, signingKey } from "../../shared/config/signing-secret.ts";
import type { VerifyKind, WebhookSource } from "../../shared/config/types.ts";
import { tokenDigest } from "./bearer.ts";

export interface ReadySource {
  name: string;
  verify: VerifyKind;
  /** the shared secret (HMAC key, the bearer token, or GitLab's secret token) */
  secret: string;
  /** SHA-256 of the bearer token (or GitLab's secret token), computed once at start-up */
  digest: Buffer;
  /** a gitlab source's decoded signing key: set, every delivery must carry its signature */
  signingKey?: Buffer;
}

export interface SourceTable {
  /** undefined for a name without a source; a Map, so `constructor` or `__proto__` are just unknown names */
  byName(name: string): ReadySource | undefined;
  /** the source `POST /events` serves: the one whose `verify` is `codehost` */
  codehost: ReadySource | undefined;
}

/** A source that cannot serve as configured: the ingress does not start (the message names the key and the fix). */
export class SourceConfigError extends Error {}

export function buildSourceTable(
  sources: Record<string, WebhookSource>,
  resolveSecret: (source: SecretSource) => string,
): SourceTable {
  const table = new Map<string, ReadySource>();
  for (const [name, source] of Object.entries(sources)) {
    const secret = resolveSecret(source.secret);
    const ready: ReadySource = { name, verify: source.verify, secret, digest: tokenDigest(secret) };
    if (source.signingSecret)
      ready.signingKey = decodeSigningSecret(name, source.signingSecret, resolveSecret);
    table.set(name, ready);
  }
  const codehost = [...table.values()].filter((source) => source.verify === "codehost");
  codehost.sort((a, b) => a.name.localeCompare(b.name));
  return { byName: (name) => table.get(name), codehost: codehost[0] };
}

// the configuration check vouches for an inline token; a stored one is first seen here
function decodeSigningSecret(
  name: string,
  source: SecretSource,
  resolveSecret: (source: SecretSource) => string,
): Buffer {
  const key = signingKey(resolveSecret(source));
  if (key) return key;
  const where =
    source.kind === "stored"
      ? `webhooks.sources.${name}.signing_secret_ref (the stored secret ${source.name})`
      : `webhooks.sources.${name}.signing_secret`;
  throw new SourceConfigError(
    `daemon.yaml: ${where} is not ${SIGNING_SECRET_SHAPE} - store it again with "svc setup webhook ${name} --signing --secret-env <ENV_NAME>", then start again`,
  );
}
