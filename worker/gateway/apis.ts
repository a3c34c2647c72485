import type { IncomingHttpHeaders } from "node:http";
import type { Target } from "../../shared/config/types.ts";
import type { ApiKind } from "./usage.ts";

export const DEFAULT_BASE_URLS: Record<ApiKind, string> = {
  anthropic: "https://api.anthropic.com",
  openai: "https://api.openai.com/v1",
};

/** A route the gateway forwards; `model`: a model call, counted and bounded by budgets. */
interface Route {
  method: string;
  path: RegExp;
  model: boolean;
}

/**
 * What the CLIs and the openai runtime call, and nothing else (run against the loopback fakes:
 * Claude Code 2.1 sends `POST /v1/messages?beta=true`, Codex 0.169 `POST /v1/responses`;
 * token counting and the model list are what they call besides when allowed to).
 */
const ROUTES: Record<ApiKind, Route[]> = {
  anthropic: [
    { method: "POST", path: /^\/v1\/messages$/, model: true },
    { method: "POST", path: /^\/v1\/messages\/count_tokens$/, model: false },
    { method: "GET", path: /^\/v1\/models(\/[\w:-][\w.:-]*)?$/, model: false },
  ],
  openai: [
    { method: "POST", path: /^\/v1\/responses$/, model: true },
    { method: "POST", path: /^\/v1\/chat\/completions$/, model: true },
    { method: "GET", path: /^\/v1\/models(\/[\w:-][\w.:-]*)?$/, model: false },
  ],
};

export function apiOf(target: Target): ApiKind {
  return target.runtime === "claude-code" ? "anthropic" : "openai";
}

/** The route `method path` of `api`, or undefined: the gateway forwards nothing else. */
export function routeOf(api: ApiKind, method: string, path: string): Route | undefined {
  return ROUTES[api].find((route) => route.method === method && route.path.test(path));
}

/** The API a request speaks by its path, for an answer in its own shape before its token is known. */
export function apiOfPath(path: string): ApiKind {
  return path.startsWith("/v1/messages") ? "anthropic" : "openai";
}

/**
 * The upstream URL of a gateway path: Anthropic's base URL stops before `/v1` (ANTHROPIC_BASE_URL),
 * OpenAI's includes it (`https://api.openai.com/v1`), so an OpenAI path loses its `/v1`.
 */
export function upstreamUrl(api: ApiKind, baseUrl: string, path: string, query: string): string {
  const base = baseUrl.replace(/\/+$/, "");
  return `${base}${api === "openai" ? path.slice(3) : path}${query}`;
}

/** The gateway's address as a client of `api` is given it (the SDKs' base URL convention). */
export function clientBaseUrl(api: ApiKind, gatewayUrl: string): string {
  return api === "openai" ? `${gatewayUrl}/v1` : gatewayUrl;
}

/** The gateway token a client sent: `x-api-key` (Anthropic) or a bearer token (both). */
export function tokenOf(headers: IncomingHttpHeaders): string | undefined {
  const key = headers["x-api-key"];
  if (typeof key === "string" && key) return key;
  const bearer = /^Bearer\s+(\S+)$/i.exec(headers.authorization ?? "");
  return bearer?.[1];
}

/** The real credential, as the API takes it. */
export function credentialHeaders(api: ApiKind, key: string): Record<string, string> {
  return api === "anthropic" ? { "x-api-key": key } : { authorization: `Bearer ${key}` };
}

export type GatewayError =
  | "unauthorized"
  | "not_found"
  | "budget"
  | "upstream"
  | "invalid"
  | "unmetered"
  | "too_large"
  | "no_recording";

const ERRORS: Record<
  GatewayError,
  { status: number; anthropic: string; openai: [type: string, code: string | null] }
> = {
  unauthorized: {
    status: 401,
    anthropic: "authentication_error",
    openai: ["invalid_request_error", "invalid_api_key"],
  },
  not_found: { status: 404, anthropic: "not_found_error", openai: ["invalid_request_error", "unknown_url"] },
  // OpenAI's answer to a spent quota; Anthropic's to an account that may not spend
  budget: { status: 429, anthropic: "billing_error", openai: ["insufficient_quota", "insufficient_quota"] },
  upstream: { status: 502, anthropic: "api_error", openai: ["server_error", "bad_gateway"] },
  // OpenAI answers a body it cannot parse so, without a code
  invalid: { status: 400, anthropic: "invalid_request_error", openai: ["invalid_request_error", null] },
  unmetered: {
    status: 400,
    anthropic: "invalid_request_error",
    openai: ["invalid_request_error", "unsupported_parameter"],
  },
  too_large: {
    status: 413,
    anthropic: "request_too_large",
    openai: ["invalid_request_error", "request_too_large"],
  },
  // a replaying run's call past the recording (recording.ts): a failure the agent does not retry
  no_recording: {
    status: 400,
    anthropic: "invalid_request_error",
    openai: ["invalid_request_error", "no_recorded_answer"],
  },
};

/**
 * An error of the gateway's own, in the shape and status the API's clients expect of it; `param`:
 * the request field it is about (OpenAI's shape names it).
 */
export function errorAnswer(
  api: ApiKind,
  kind: GatewayError,
  message: string,
  param: string | null = null,
): { status: number; body: string } {
  const error = ERRORS[kind];
  const status = kind === "budget" && api === "anthropic" ? 402 : error.status;
  const body =
    api === "anthropic"
      ? { type: "error", error: { type: error.anthropic, message } }
      : { error: { message, type: error.openai[0], param, code: error.openai[1] } };
  return { status, body: JSON.stringify(body) };
}
