import { verifyHexHmac } from "../hmac.ts";

/**
 * Code-host (GitHub-style) deliveries: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body>`.
 * The body must be the bytes as received: re-serialised JSON would not match the signature.
 */
export const SIGNATURE_HEADER = "x-hub-signature-256";
export const EVENT_HEADER = "x-github-event";
export const DELIVERY_HEADER = "x-github-delivery";

export function verifyCodehostSignature(
  header: string | undefined,
  rawBody: Buffer,
  secret: string,
): boolean {
  const hex = header?.startsWith("sha256=") ? header.slice("sha256=".length) : undefined;
  return verifyHexHmac(hex, rawBody, secret);
}
