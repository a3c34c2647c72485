import type { Response } from "express";

/**
 * Error answers of the ingress: JSON `{ "error": { "code", "message" } }`. Messages name what was
 * wrong with the request and how to fix it; they never echo a header, token or payload.
 */
export function sendError(
  res: Response,
  status: number,
  code: string,
  message: string,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent) return;
  res.status(status).set(headers).json({ error: { code, message } });
}

/**
 * Every webhook rejection answers with exactly these bytes and headers (Node adds only `Date`,
 * `Connection` and `Keep-Alive`, equal for equal requests), so a wrong token, a missing or
 * malformed header, a wrong scheme and a route without a source cannot be told apart.
 */
const UNAUTHORIZED_BODY = Buffer.from(
  JSON.stringify({ error: { code: "unauthorized", message: "the request is not authorized" } }),
);

export function sendUnauthorized(res: Response): void {
  res.writeHead(401, {
    "Content-Type": "application/json; charset=utf-8",
    "Content-Length": String(UNAUTHORIZED_BODY.length),
    "Cache-Control": "no-store",
  });
  res.end(UNAUTHORIZED_BODY);
}

/** Seconds a caller should wait before retrying while the database is unreachable. */
export const RETRY_AFTER_SECONDS = 5;

export function sendUnavailable(res: Response): void {
  sendError(
    res,
    503,
    "database_unavailable",
    "the database is unreachable, so the request was not stored; retry later",
    { "Retry-After": String(RETRY_AFTER_SECONDS) },
  );
}

/**
 * Postgres refused the value itself (a NUL character or a lone surrogate in a string, nesting
 * deeper than it parses): the caller's payload is at fault, so the answer is 400, not 5xx.
 */
export function isUnstorableValue(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return code === "22P05" || code === "22P02" || code === "22021" || code === "54001" || code === "22025";
}

/** Network failures and Postgres's connection-class errors: the request may succeed once it is back. */
export function isDatabaseUnavailable(error: unknown): boolean {
  const { code, message } = error as { code?: unknown; message?: unknown };
  if (typeof code === "string") {
    if (/^(08|57P|53)/.test(code)) return true;
    if (/^E[A-Z]+$/.test(code)) return true;
  }
  return (
    typeof message === "string" &&
    /connection terminated|timeout exceeded when trying to connect|query read timeout|not queryable|connection (?:error|refused)|Connection terminated/i.test(
      message,
    )
  );
}
