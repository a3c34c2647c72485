import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

/**
 * Bearer sources: `Authorization: Bearer <token>`. Both sides are reduced to SHA-256 digests first,
 * so `timingSafeEqual` always compares 32 bytes and the time taken reveals neither the token's
 * length nor how much of it matched.
 */

export function tokenDigest(token: string): Buffer {
  return createHash("sha256").update(token, "utf8").digest();
}

/**
 * Compared against when a route has no source: a missing source and a wrong token then take the
 * same path and the same time, so a caller cannot learn which names exist.
 */
export const UNKNOWN_SOURCE_DIGEST: Buffer = tokenDigest(randomBytes(32).toString("base64url"));

// the scheme is case-insensitive (RFC 9110); the token is taken as written, since operators choose
// secrets that need not fit RFC 6750's b64token alphabet
const BEARER = /^bearer +([^ ].*?) *$/i;

export function verifyBearer(authorization: string | undefined, expected: Buffer): boolean {
  const match = authorization === undefined ? null : BEARER.exec(authorization);
  // a malformed header is still hashed and compared, so it costs what a wrong token costs
  const presented = tokenDigest(match?.[1] ?? "");
  return timingSafeEqual(presented, expected) && match !== null;
}
