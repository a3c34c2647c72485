import { createPublicKey, createSecretKey, type KeyObject } from "node:crypto";
import { createRemoteJWKSet, errors, type JWTVerifyGetKey, jwtVerify } from "jose";
import type { SecretSource } from "../../shared/config/secret-source.ts";
import type { BrokerConfig } from "../../shared/config/types.ts";
import type { Principal } from "./principal.ts";

/** A broker JWT whose `scope` claim is not a space-delimited string: refused on every route. */
export class BrokerScopeClaimError extends Error {}

/** A JWT that fails verification (signature, issuer, audience, expiry). */
export class BrokerTokenError extends Error {}

export interface BrokerVerifier {
  verify(token: string): Promise<Principal>;
}

function keyFrom(
  config: BrokerConfig,
  resolveSecret: (source: SecretSource) => string,
): KeyObject | JWTVerifyGetKey {
  if (config.jwksUrl) return createRemoteJWKSet(new URL(config.jwksUrl));
  if (config.publicKey) {
    const text = config.publicKey.trim();
    // a JWK written as JSON, or a PEM public key
    return text.startsWith("{")
      ? createPublicKey({ key: JSON.parse(text) as import("node:crypto").JsonWebKey, format: "jwk" })
      : createPublicKey(text);
  }
  if (config.secret) return createSecretKey(Buffer.from(resolveSecret(config.secret), "utf8"));
  throw new Error("auth.broker needs one of jwks_url, public_key or secret");
}

/**
 * Verifies broker JWTs with jose against the configured key or JWKS. The `scope` claim must be a
 * space-delimited string (RFC 8693/9068 form); an array, number or object is not read leniently,
 * because a broker that sends one is misconfigured and every one of its requests must fail.
 */
export function createBrokerVerifier(
  config: BrokerConfig,
  resolveSecret: (source: SecretSource) => string,
): BrokerVerifier {
  const key = keyFrom(config, resolveSecret);
  const options = {
    ...(config.issuer ? { issuer: config.issuer } : {}),
    ...(config.audience ? { audience: config.audience } : {}),
  };
  return {
    async verify(token) {
      let payload: Record<string, unknown>;
      try {
        const verified =
          typeof key === "function"
            ? await jwtVerify(token, key, options)
            : await jwtVerify(token, key, options);
        payload = verified.payload;
      } catch (error) {
        if (error instanceof errors.JOSEError)
          throw new BrokerTokenError(`broker token rejected: ${error.code}`);
        throw error;
      }
      const claim = payload.scope;
      if (claim !== undefined && typeof claim !== "string") {
        const shape = Array.isArray(claim) ? "an array" : claim === null ? "null" : `a ${typeof claim}`;
        throw new BrokerScopeClaimError(
          `the broker's "scope" claim is ${shape}; it must be a space-delimited string (e.g. "triggers:read admin")`,
        );
      }
      const scopes = (claim ?? "").split(" ").filter(Boolean);
      const subject = typeof payload.sub === "string" && payload.sub ? payload.sub : "anonymous";
      return { owner: `broker:${subject}`, scopes, sandboxed: false, via: "broker" };
    },
  };
}

export function looksLikeJwt(token: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(token);
}
