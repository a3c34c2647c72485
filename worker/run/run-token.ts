import { join } from "node:path";
import {
  type ApiTokenRow,
  type NewToken,
  newRunToken,
  revokeToken,
  storeToken,
} from "../../db/api_tokens.ts";
import type { Queryable } from "../../db/queryable.ts";
import { DEFAULT_MAX_TURNS } from "../../shared/config/agent-tools.ts";
import type { Pipeline, Target } from "../../shared/config/types.ts";
import { writeFreshFile } from "../../shared/no-follow.ts";

/** Scopes every run token carries: the tool protocol (read and write) and knowledge reads. */
export const RUN_TOKEN_SCOPES = ["mcp:read", "mcp:write", "knowledge:read"];

/** What an agent gets to reach the daemon's tools during one run. */
export interface RunAccess {
  token: string;
  /** the daemon's tool protocol endpoint, `<daemon>/mcp` */
  mcpUrl: string;
  /** exported to the agent process only, never to setup steps */
  env: Record<string, string>;
}

export interface RunTokenRequest {
  db: Queryable;
  /** where agents reach the daemon (SVC_DAEMON_URL, else the configured ingress address) */
  daemonUrl: string | undefined;
  invocationId: string;
  pipeline: Pipeline;
  agent?: string;
  repo?: string;
  /** the event came from outside the repository's team (worker/event/context.ts isOutsider) */
  outsider: boolean;
  worktree: string;
  /** the agent's own folder (Workspace.agentDir): mcp.json goes there */
  agentDir: string;
  /** the token expires this long after issue should the worker die before revoking it */
  lifetimeMs: number;
  /**
   * the agent's task row, its role in an orchestrated run (orchestrator, or a task of depth 1), and
   * whether it may keep its result so far on that task (worker/run/partial.ts)
   */
  binding?: Pick<NonNullable<ApiTokenRow["run"]>, "task" | "role" | "keepsResult">;
}

/**
 * How long a run token lives should nobody revoke it: the longest the agent may take (a command's
 * timeout; for an agent loop, the request timeout for each of its turns; for an agent CLI, its
 * timeout for each credential it may try) plus a minute.
 */
export function runTokenLifetimeMs(target: Target): number {
  return target.timeoutMs * attempts(target) + 60_000;
}

/** How many times a target's timeout may pass in one run: per turn, per credential, or once. */
function attempts(target: Target): number {
  if (target.runtime === "openai") return target.maxTurns ?? DEFAULT_MAX_TURNS;
  // an agent CLI runs again, from the start, on the next credential after a refusal
  if (target.runtime === "claude-code" || target.runtime === "codex")
    return Math.max(1, target.credentials.length);
  return 1;
}

/** The scopes of a pipeline's run token: the base scopes plus `host:execute:<name>` per listed tool. */
export function runTokenScopes(pipeline: Pick<Pipeline, "tools">): string[] {
  return [...RUN_TOKEN_SCOPES, ...(pipeline.tools ?? []).map((name) => `host:execute:${name}`)];
}

/**
 * The `mcpServers` file agent CLIs load (`mcp.json` in the agent's folder): one HTTP server, `svc`,
 * with the run token as bearer. It holds the token, so only the agent's user may read it; an
 * earlier attempt's agent may have left a link in its place, which is replaced, never written through.
 */
export function writeMcpConfig(agentDir: string, mcpUrl: string, token: string): string {
  const file = join(agentDir, "mcp.json");
  const config = {
    mcpServers: { svc: { type: "http", url: mcpUrl, headers: { Authorization: `Bearer ${token}` } } },
  };
  writeFreshFile(file, `${JSON.stringify(config, null, 2)}\n`, 0o600);
  return file;
}

/** A run token made for one agent, not stored yet: the row to store, and what the agent gets. */
export interface RunToken {
  stored: NewToken;
  access: RunAccess;
}

/**
 * A token bound to this invocation: scopes from runTokenScopes, marked sandboxed when the pipeline
 * runs in a sandbox (host tools then refuse it whatever its scopes), expiring on its own after
 * `lifetimeMs`. It is valid once `stored` is inserted: the agent's task start carries it
 * (db/tasks.ts startTask), and its end revokes it (finishTask).
 */
export function newAgentToken(request: Omit<RunTokenRequest, "db">): RunToken {
  const { invocationId, pipeline } = request;
  const stored = newRunToken({
    invocationId,
    scopes: runTokenScopes(pipeline),
    sandboxed: pipeline.sandbox !== undefined,
    expiresAt: new Date(Date.now() + request.lifetimeMs),
    run: {
      pipeline: pipeline.name,
      ...(request.agent ? { agent: request.agent } : {}),
      ...(request.repo ? { repo: request.repo } : {}),
      outsider: request.outsider,
      worktree: request.worktree,
      ...request.binding,
    },
  });
  const { token } = stored.issued;
  const daemon = (request.daemonUrl ?? "").replace(/\/+$/, "");
  const mcpUrl = daemon ? `${daemon}/mcp` : "";
  const env: Record<string, string> = { SVC_AGENT_TOKEN: token };
  if (daemon) {
    const config = writeMcpConfig(request.agentDir, mcpUrl, token);
    Object.assign(env, {
      SVC_DAEMON_URL: daemon,
      SVC_MCP_URL: mcpUrl,
      SVC_MCP_TOKEN: token,
      SVC_MCP_CONFIG: config,
    });
  }
  return { stored, access: { token, mcpUrl, env } };
}

/**
 * Runs `work` with a token of its own (newAgentToken), stored first and revoked when `work` ends,
 * however it ends: for an agent whose task start and end do not carry the token (an orchestrated
 * task's).
 */
export async function withRunToken<T>(
  request: RunTokenRequest,
  work: (access: RunAccess) => Promise<T>,
): Promise<T> {
  const { stored, access } = newAgentToken(request);
  await storeToken(request.db, stored);
  try {
    return await work(access);
  } finally {
    // only this agent's token: the tasks of an orchestrated run hold tokens of the same invocation.
    // A failed revoke leaves a token that expires on its own; the run's end must not wait on it
    await revokeToken(request.db, stored.issued.id).catch(() => {});
  }
}
