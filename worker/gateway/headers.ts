import type { IncomingHttpHeaders } from "node:http";
import type { ApiKind } from "./usage.ts";

/**
 * What passes the gateway between an agent and its model API, both ways: allow-lists, so a header
 * a model API adds tomorrow stays behind until it is judged here. Judged from the APIs' references
 * (docs.anthropic.com "API overview", "Beta headers", "Rate limits"; platform.openai.com "API
 * reference: Debugging requests", "Rate limits").
 *
 * Left behind on the way up: the credential's scope is the target's, so the agent may not choose
 * another organisation or project the key can reach (`OpenAI-Organization`, `OpenAI-Project`), nor a
 * beta that makes the API act beyond the one answer the gateway meters (see BETAS). Left behind on
 * the way down: who the credential belongs to (`openai-organization`, `openai-project`,
 * `anthropic-organization-id`) and the API's cookies (`set-cookie`).
 */
const REQUEST: Record<ApiKind, { names: Set<string>; prefixes: string[] }> = {
  anthropic: {
    names: new Set([
      "content-type",
      "content-length",
      "accept",
      "user-agent",
      "anthropic-version",
      "anthropic-beta",
    ]),
    // the SDKs' own description of themselves (language, version, retry count)
    prefixes: ["x-stainless-"],
  },
  openai: {
    names: new Set(["content-type", "content-length", "accept", "user-agent", "x-client-request-id"]),
    prefixes: ["x-stainless-"],
  },
};

const RESPONSE = {
  names: new Set([
    "content-type",
    "content-length",
    "content-encoding",
    "cache-control",
    // what a report of a failed call quotes to the API's support
    "request-id",
    "x-request-id",
    // what the SDKs' retries read
    "retry-after",
    "retry-after-ms",
    "x-should-retry",
    "openai-processing-ms",
    "openai-version",
  ]),
  prefixes: ["x-ratelimit-", "anthropic-ratelimit-"],
};

/**
 * Anthropic betas an agent may turn on, by family (the name before its date): each shapes the one
 * answer it asks for and is billed in that answer's usage. Claude Code sends several of these with
 * every request, and some request fields are refused without theirs (`context_management`). Left
 * out, among others: `mcp-client-` (Anthropic's servers call URLs the request names: a way out of
 * a sandbox's network), `files-api-` (the organisation's stored files, other agents' included),
 * `code-execution-` and `skills-` (compute billed apart from tokens), `message-batches-`.
 */
const BETAS = [
  "claude-code-",
  "interleaved-thinking-",
  "fine-grained-tool-streaming-",
  "token-efficient-tools-",
  "prompt-caching-",
  "extended-cache-ttl-",
  "output-128k-",
  "context-management-",
  "context-1m-",
  "effort-",
  "advanced-tool-use-",
  "tool-search-tool-",
  "tool-examples-",
  "structured-outputs-",
];

const allowed = (name: string, list: { names: Set<string>; prefixes: string[] }) =>
  list.names.has(name) || list.prefixes.some((prefix) => name.startsWith(prefix));

/**
 * The agent's request headers that go on to `api`, and the names (and beta flags) left behind, for
 * the log: an agent that breaks on a missing one is then diagnosed from the worker's log.
 */
export function requestHeaders(
  api: ApiKind,
  headers: IncomingHttpHeaders,
): { passed: Record<string, string | string[]>; dropped: string[] } {
  const passed: Record<string, string | string[]> = {};
  const dropped: string[] = [];
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    if (!allowed(name, REQUEST[api])) {
      // the gateway token: never forwarded, and not worth a log line
      if (name !== "authorization" && name !== "x-api-key") dropped.push(name);
      continue;
    }
    if (name !== "anthropic-beta") {
      passed[name] = value;
      continue;
    }
    const flags = (Array.isArray(value) ? value.join(",") : value)
      .split(",")
      .map((flag) => flag.trim())
      .filter(Boolean);
    const kept = flags.filter((flag) => BETAS.some((family) => flag.startsWith(family)));
    dropped.push(...flags.filter((flag) => !kept.includes(flag)).map((flag) => `anthropic-beta: ${flag}`));
    if (kept.length) passed[name] = kept.join(",");
  }
  return { passed, dropped };
}

/** The model API's answer headers that go back to the agent. */
export function responseHeaders(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const passed: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined && allowed(name, RESPONSE)) passed[name] = value;
  }
  return passed;
}

/** Headers of one hop (RFC 9110 7.6.1) and the credential's: never forwarded to or from the daemon. */
const HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "host",
  "authorization",
  "x-api-key",
  "accept-encoding",
]);

/**
 * Headers between a sandboxed agent and svc's own daemon (daemon.ts), either way: all but the hop
 * headers and the tokens. The daemon is svc's, so its protocol's headers (MCP's session) pass.
 */
export function passedHeaders(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP.has(name)) continue;
    out[name] = value;
  }
  return out;
}
