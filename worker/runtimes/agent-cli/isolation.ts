import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import type { RunAccess } from "../../run/run-token.ts";

/**
 * A fresh, private HOME for one CLI run, in the agent's folder (never RUN_DIR, which the setup
 * steps write): whatever the host's own user keeps in ~/.claude, ~/.codex or ~/.config
 * (settings, sessions, MCP servers, logins) is not there, and what the CLI writes stays with the
 * run. Written anew for every attempt, so a failed-over credential's session does not carry into
 * the next.
 */
export async function freshHome(agentDir: string): Promise<string> {
  const home = join(agentDir, "home");
  await rm(home, { recursive: true, force: true });
  await mkdir(home, { recursive: true, mode: 0o700 });
  return home;
}

/**
 * The complete environment of an agent CLI: the run's environment (the pipeline's `env`
 * manifest, the run variables and PATH), the private HOME and XDG directories under it, the
 * `SVC_MCP_*` variables of the run token and what the CLI itself needs (its credential, its
 * switches). Nothing else of the worker's environment reaches it, and no other `SVC_*` variable.
 */
export function cliEnvironment(
  runEnv: Record<string, string>,
  home: string,
  access: RunAccess,
  own: Record<string, string>,
): Record<string, string> {
  const mcp = Object.entries(access.env).filter(([name]) => name.startsWith("SVC_MCP_"));
  return {
    ...runEnv,
    HOME: home,
    XDG_CONFIG_HOME: join(home, ".config"),
    XDG_CACHE_HOME: join(home, ".cache"),
    XDG_DATA_HOME: join(home, ".local", "share"),
    XDG_STATE_HOME: join(home, ".local", "state"),
    ...Object.fromEntries(mcp),
    ...own,
  };
}
