import { verifyHexHmac } from "../hmac.ts";

/**
 * Issue-tracker (Linear-style) deliveries: `Linear-Signature: <hex HMAC-SHA256 of the raw body>`,
 * and a `webhookTimestamp` (milliseconds since the epoch) in the payload that must be within
 * 60 s of now, so a captured delivery cannot be replayed later.
 */
export const SIGNATURE_HEADER = "linear-signature";
export const DELIVERY_HEADER = "linear-delivery";
export const MAX_TIMESTAMP_SKEW_MS = 60_000;

export function verifyTrackerSignature(header: string | undefined, rawBody: Buffer, secret: string): boolean {
  return verifyHexHmac(header, rawBody, secret);
}

export function isFreshTimestamp(payload: unknown, now: number = Date.now()): boolean {
  if (typeof payload !== "object" || payload === null) return false;
  const timestamp = (payload as { webhookTimestamp?: unknown }).webhookTimestamp;
  return (
    typeof timestamp === "number" &&
    Number.isFinite(timestamp) &&
    Math.abs(now - timestamp) <= MAX_TIMESTAMP_SKEW_MS
  );
}
