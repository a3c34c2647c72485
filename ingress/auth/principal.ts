import type { ApiTokenRow } from "../../db/api_tokens.ts";
import { unknownScopes } from "../../shared/scopes.ts";

/**
 * What a run token is bound to: its invocation, and the binding stored with it (db/api_tokens.ts
 * `issueRunToken`: pipeline, agent, repo, the worktree host tools run in, the agent's task row, and
 * its role: an orchestrator may use the task tools, a task may not).
 */
export type RunBinding = NonNullable<ApiTokenRow["run"]> & { invocation: string };

/** Who a request acts as, once its credentials have been checked. */
export interface Principal {
  /** the owner key stored on workloads and triggers it creates, e.g. `token:ci`, `tok_…`, `broker:<sub>` */
  owner: string;
  scopes: readonly string[];
  /** a token the daemon issued to a sandboxed agent run: refused for host tools whatever its scopes */
  sandboxed: boolean;
  /** set for a run token: the run it was issued for, so tools act on that run */
  run?: RunBinding;
  via: "config-token" | "issued-token" | "broker" | "local";
}

/** Route requirement meaning "any valid credential", used only by `GET /whoami`. */
export const AUTHENTICATED = "authenticated";

/**
 * Scopes that include others. `workloads:admin` is the owner-boundary crossing and reaches every
 * workload route; `mcp:write` tool calls include the read ones. Nothing else implies anything:
 * `admin` in particular does not reach workloads.
 */
export const IMPLIED_SCOPES: Readonly<Record<string, readonly string[]>> = {
  "workloads:admin": ["workloads:read", "workloads:write"],
  "mcp:write": ["mcp:read"],
};

export type Refusal =
  | { reason: "out_of_vocabulary"; scopes: string[] }
  | { reason: "sandboxed" }
  | { reason: "scope" };

/** null when `principal` may use a route requiring `required`; otherwise why not. */
export function refusal(principal: Principal, required: string): Refusal | null {
  const unknown = unknownScopes(principal.scopes);
  if (unknown.length) return { reason: "out_of_vocabulary", scopes: unknown };
  if (required.startsWith("host:execute:") && principal.sandboxed) return { reason: "sandboxed" };
  if (required === AUTHENTICATED) return null;
  for (const scope of principal.scopes) {
    if (scope === "*" || scope === required || IMPLIED_SCOPES[scope]?.includes(required)) return null;
  }
  return { reason: "scope" };
}

export function allows(principal: Principal, required: string): boolean {
  return refusal(principal, required) === null;
}

/** `workloads:admin` and `*` see every owner's workloads; `admin` does not. */
export function crossesOwnerBoundary(principal: Principal): boolean {
  if (unknownScopes(principal.scopes).length) return false;
  return principal.scopes.includes("*") || principal.scopes.includes("workloads:admin");
}

/** The anonymous loopback client: a local program talking to the ingress directly (see shared/loopback-client.ts). */
export const LOCAL_PRINCIPAL: Principal = Object.freeze({
  owner: "local",
  scopes: Object.freeze(["*"]),
  sandboxed: false,
  via: "local",
});
