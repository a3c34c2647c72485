/**
 * GitLab's webhook signing token, as its webhook form and API take it: `whsec_` and the base64 of
 * the HMAC key (Standard Webhooks' secret format; GitLab generates 32 bytes). Read in one place so
 * the configuration check and the ingress that signs with it agree on what a valid token is.
 */
export const SIGNING_SECRET_PREFIX = "whsec_";

/** Standard Webhooks' bounds on the decoded key; GitLab's 32 bytes lie inside them. */
export const SIGNING_KEY_BYTES = { min: 24, max: 64 } as const;

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** The HMAC key a signing token stands for, or undefined when the value is not such a token. */
export function signingKey(token: string): Buffer | undefined {
  if (!token.startsWith(SIGNING_SECRET_PREFIX)) return undefined;
  const encoded = token.slice(SIGNING_SECRET_PREFIX.length);
  if (!BASE64.test(encoded)) return undefined;
  const key = Buffer.from(encoded, "base64");
  // Buffer.from skips what it cannot read; a token that does not round-trip was mistyped
  if (key.toString("base64").replace(/=+$/, "") !== encoded.replace(/=+$/, "")) return undefined;
  if (key.length < SIGNING_KEY_BYTES.min || key.length > SIGNING_KEY_BYTES.max) return undefined;
  return key;
}

/** What a value that is not a signing token needs, for a message that names the key it came from. */
export const SIGNING_SECRET_SHAPE = `GitLab's signing token: "${SIGNING_SECRET_PREFIX}" followed by the base64 of a ${SIGNING_KEY_BYTES.min}- to ${SIGNING_KEY_BYTES.max}-byte key, exactly as the webhook form shows it`;
