/**
 * The scope vocabulary of the contract, exactly. A token listing anything else matches nothing
 * and is refused on every route (the old `pipelines:*` and `agents:*` spellings included).
 * `host:execute:<name>` is the one parameterised scope.
 */
export const SCOPES = [
  "workloads:read",
  "workloads:write",
  "workloads:admin",
  "triggers:read",
  "pipelines:invoke",
  "knowledge:read",
  "repos:read",
  "evals:write",
  "admin",
  "*",
  "mcp:read",
  "mcp:write",
] as const;

export type Scope = (typeof SCOPES)[number] | `host:execute:${string}`;

const HOST_EXECUTE = /^host:execute:[A-Za-z0-9_-]+$/;
const VOCABULARY = new Set<string>(SCOPES);

export function isKnownScope(scope: string): scope is Scope {
  return VOCABULARY.has(scope) || HOST_EXECUTE.test(scope);
}

/** The scopes outside the vocabulary; a non-empty answer means the token is refused everywhere. */
export function unknownScopes(scopes: readonly string[]): string[] {
  return scopes.filter((scope) => !isKnownScope(scope));
}
