import { createHmac, timingSafeEqual } from "node:crypto";
import { tokenDigest } from "../bearer.ts";

/**
 * GitLab deliveries, as GitLab's documentation and source state them (confirmed against the
 * gitlab-org/gitlab docs `user/project/integrations/webhooks.md` "Delivery headers" and
 * `app/services/web_hook_service.rb`, and merge requests !230944 and !231325 that added signing):
 *
 * - the webhook's secret token is sent as it is, in `X-Gitlab-Token` (no HMAC of the body);
 * - `Idempotency-Key` is one id per delivery that stays the same across its retries;
 *   `X-Gitlab-Event-UUID` is older (GitLab sends it without the key), and is shared by every hook
 *   a request fired when that request itself came from a webhook;
 * - a webhook with a signing token (`whsec_<base64 key>`) also sends Standard Webhooks headers:
 *   `webhook-id` (the Idempotency-Key), `webhook-timestamp` (unix seconds) and `webhook-signature`,
 *   space-separated `v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<raw body>">`
 *   keyed with the decoded key.
 */
export const TOKEN_HEADER = "x-gitlab-token";
export const EVENT_UUID_HEADER = "x-gitlab-event-uuid";
export const IDEMPOTENCY_HEADER = "idempotency-key";
export const SIGNATURE_ID_HEADER = "webhook-id";
export const SIGNATURE_TIMESTAMP_HEADER = "webhook-timestamp";
export const SIGNATURE_HEADER = "webhook-signature";

/** How far a signature's timestamp may be from now, either way; older ones are replays. */
export const MAX_SIGNATURE_SKEW_MS = 5 * 60_000;

const NOTHING = Buffer.alloc(32);
const TIMESTAMP = /^[0-9]{1,15}$/;
const SIGNATURE = /^v1,([A-Za-z0-9+/]{43}=?)$/;

/**
 * `X-Gitlab-Token` against the source's secret, both reduced to SHA-256 first (as bearer sources
 * are), so the comparison takes the same time whatever the token's length or how much of it matched.
 */
export function verifyGitlabToken(presented: string | undefined, expected: Buffer): boolean {
  return timingSafeEqual(tokenDigest(presented ?? ""), expected) && presented !== undefined;
}

export interface StandardSignature {
  id: string | undefined;
  timestamp: string | undefined;
  signature: string | undefined;
}

/**
 * The Standard Webhooks signature of a delivery: one of the listed `v1` signatures must be the
 * HMAC of `<id>.<timestamp>.<raw body>`, and the timestamp within MAX_SIGNATURE_SKEW_MS of `now`
 * (milliseconds). The HMAC is computed, and every listed signature compared, even when the headers
 * are missing or malformed, so a malformed delivery costs what a wrong one does.
 */
export function verifyStandardSignature(
  headers: StandardSignature,
  rawBody: Buffer,
  key: Buffer,
  now: number,
): boolean {
  const { id, timestamp, signature } = headers;
  const wellFormed = id !== undefined && id !== "" && timestamp !== undefined && TIMESTAMP.test(timestamp);
  const expected = createHmac("sha256", key)
    .update(`${id ?? ""}.${timestamp ?? ""}.`)
    .update(rawBody)
    .digest();
  let matched = false;
  for (const candidate of (signature ?? "").split(" ")) {
    const base64 = SIGNATURE.exec(candidate)?.[1];
    const presented = base64 ? Buffer.from(base64, "base64") : NOTHING;
    // no early exit: which of the listed signatures matched is nobody's business
    if (timingSafeEqual(presented, expected) && base64 !== undefined) matched = true;
  }
  const fresh = wellFormed && Math.abs(now - Number(timestamp) * 1000) <= MAX_SIGNATURE_SKEW_MS;
  return matched && fresh;
}
