import type { Request } from "express";
import { parseDuration } from "../../shared/config/duration.ts";
import { badRequest } from "./errors.ts";

/** Query and body readers that answer bad input with a 400 naming the parameter and the fix. */

export function queryString(req: Request, name: string): string | undefined {
  const value = req.query[name];
  if (value === undefined) return undefined;
  if (typeof value !== "string") throw badRequest(`query parameter "${name}" must be given once`);
  return value;
}

export function queryInt(req: Request, name: string, fallback: number, min: number, max: number): number {
  const text = queryString(req, name);
  if (text === undefined) return fallback;
  if (!/^\d+$/.test(text) || Number(text) < min || Number(text) > max) {
    throw badRequest(`query parameter "${name}" must be an integer from ${min} to ${max}`);
  }
  return Number(text);
}

/** `since` as an ISO timestamp or a duration back from now (`30m`, `24h`, `7d`). */
export function parseSince(text: string, name = "since", now = Date.now()): Date {
  const duration = parseDuration(text);
  if (duration !== undefined) return new Date(now - duration);
  if (/^\d{4}-\d{2}-\d{2}/.test(text) && !Number.isNaN(Date.parse(text))) return new Date(text);
  throw badRequest(`"${name}" must be an ISO timestamp or a duration such as 30m, 24h or 7d`);
}

export function querySince(req: Request): Date | undefined {
  const text = queryString(req, "since");
  return text === undefined ? undefined : parseSince(text);
}

export function queryFlag(req: Request, name: string): boolean {
  const text = queryString(req, name);
  if (text === undefined) return false;
  if (text === "1" || text === "true") return true;
  if (text === "0" || text === "false") return false;
  throw badRequest(`query parameter "${name}" must be 1 or 0`);
}

/** The JSON body as an object ({} when absent); arrays and scalars are refused. */
export function bodyObject(req: Request): Record<string, unknown> {
  const body: unknown = req.body;
  if (
    body === undefined ||
    body === null ||
    (typeof body === "object" && Object.keys(body).length === 0 && !Array.isArray(body))
  )
    return {};
  if (typeof body !== "object" || Array.isArray(body))
    throw badRequest("the request body must be a JSON object");
  return body as Record<string, unknown>;
}

export function allowOnlyKeys(body: Record<string, unknown>, allowed: readonly string[]): void {
  const extra = Object.keys(body).filter((key) => !allowed.includes(key));
  if (extra.length) {
    throw badRequest(
      `unknown field${extra.length > 1 ? "s" : ""} ${extra.map((k) => `"${k}"`).join(", ")}; allowed: ${allowed.join(", ") || "none"}`,
    );
  }
}

export function pathParam(req: Request, name: string): string {
  const value = req.params[name];
  if (typeof value !== "string" || !value) throw badRequest(`path parameter "${name}" is missing`);
  return value;
}
