import { createHash, timingSafeEqual } from "node:crypto";
import type pg from "pg";
import { findTokenByHash, hashToken } from "../../db/api_tokens.ts";
import type { SecretSource } from "../../shared/config/secret-source.ts";
import type { ConfigSnapshot } from "../../shared/config/types.ts";
import type { Logger } from "../../shared/logger.ts";
import type { Principal } from "./principal.ts";

interface ConfiguredToken {
  name: string;
  scopes: string[];
  digest: Buffer;
}

export interface TokenResolver {
  /** the principal of an opaque bearer token, or null when it matches no live token */
  resolve(token: string): Promise<Principal | null>;
}

/**
 * Opaque tokens come from two places: `auth.tokens` in daemon.yaml (compared in constant time as
 * SHA-256 digests, so neither the length nor a prefix of a configured secret leaks) and tokens
 * issued by `svc token issue` or for sandboxed runs (looked up by hash in `svc.api_tokens`).
 */
export function createTokenResolver(deps: {
  pool: pg.Pool;
  config: Readonly<ConfigSnapshot>;
  resolveSecret: (source: SecretSource) => string;
  logger: Logger;
}): TokenResolver {
  const configured: ConfiguredToken[] = [];
  for (const token of Object.values(deps.config.auth?.tokens ?? {})) {
    try {
      const secret = deps.resolveSecret(token.secret);
      if (!secret) throw new Error("empty secret");
      configured.push({
        name: token.name,
        scopes: [...token.scopes],
        digest: createHash("sha256").update(secret, "utf8").digest(),
      });
    } catch (error) {
      // the daemon still starts; requests with this token are refused as unknown
      deps.logger.warn("auth token secret unavailable", {
        event: "auth.token_unavailable",
        name: token.name,
        reason: (error as Error).message,
      });
    }
  }
  return {
    async resolve(token) {
      const digest = hashToken(token);
      let match: ConfiguredToken | undefined;
      // every entry is compared, so the time taken does not say which one matched
      for (const entry of configured) if (timingSafeEqual(entry.digest, digest) && !match) match = entry;
      if (match)
        return { owner: `token:${match.name}`, scopes: match.scopes, sandboxed: false, via: "config-token" };
      const row = await findTokenByHash(deps.pool, digest);
      if (!row) return null;
      return {
        owner: row.id,
        scopes: row.scopes,
        sandboxed: row.sandboxed,
        ...(row.invocation_id ? { run: { ...row.run, invocation: row.invocation_id } } : {}),
        via: "issued-token",
      };
    },
  };
}
