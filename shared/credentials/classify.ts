/**
 * What a model API's answer says about the credential that made the request — the rows of the
 * contract's credential table:
 * - 401, 403, or an error naming a revoked or expired token: the credential is dead;
 * - 429: it cools until `Retry-After` (seconds or an HTTP date; one minute when absent);
 * - anything else is about the request, not the credential.
 */
export type CredentialVerdict =
  | { kind: "ok" }
  | { kind: "dead"; reason: string }
  | { kind: "cooling"; until: Date; reason: string }
  | { kind: "other"; reason: string };

export const DEFAULT_COOLDOWN_MS = 60_000;

const REVOKED_OR_EXPIRED = /\b(revoked|expired)\b|token_revoked|token_expired|key_revoked|key_expired/i;

export function retryAfter(header: string | undefined, now: Date): Date {
  if (header) {
    const seconds = Number(header);
    if (Number.isFinite(seconds) && seconds >= 0) return new Date(now.getTime() + seconds * 1000);
    const date = Date.parse(header);
    if (!Number.isNaN(date)) return new Date(Math.max(date, now.getTime()));
  }
  return new Date(now.getTime() + DEFAULT_COOLDOWN_MS);
}

function errorText(body: unknown): string {
  if (body === null || typeof body !== "object") return typeof body === "string" ? body : "";
  const error = (body as { error?: unknown }).error;
  if (typeof error === "string") return error;
  if (error && typeof error === "object") {
    const { code, type, message } = error as { code?: unknown; type?: unknown; message?: unknown };
    return [code, type, message].filter((part) => typeof part === "string").join(" ");
  }
  return "";
}

export function classifyResponse(
  status: number,
  headers: Record<string, string | string[] | undefined>,
  body: unknown,
  now = new Date(),
): CredentialVerdict {
  const text = errorText(body);
  if (status === 401 || status === 403) return { kind: "dead", reason: `HTTP ${status}` };
  if (status >= 400 && REVOKED_OR_EXPIRED.test(text)) {
    return { kind: "dead", reason: /expired/i.test(text) ? "token expired" : "token revoked" };
  }
  if (status === 429) {
    const header = headers["retry-after"];
    return {
      kind: "cooling",
      until: retryAfter(Array.isArray(header) ? header[0] : header, now),
      reason: "HTTP 429",
    };
  }
  if (status >= 200 && status < 300) return { kind: "ok" };
  return { kind: "other", reason: `HTTP ${status}` };
}
