import type { HostTool } from "./host-tool-types.ts";
import { checkKeys, int, mapping, oneOf, quote, str, type YamlMap } from "./read.ts";
import { type ConfigFile, formatPath, type KeyPath } from "./source.ts";
import type { AgentAccess, CommandTarget } from "./types.ts";

/**
 * Configuration of what agents may use: a pipeline's `tools` (host tools its runs may call),
 * `targets.<name>.max_turns` of the `openai` agent loop, and a `command` target's `auth_failure`
 * and credential `env` names.
 */

export const DEFAULT_MAX_TURNS = 20;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** `tools: [<host tool name>, ...]` of a pipeline: the host tools its runs' tokens may call. */
export function readPipelineTools(f: ConfigFile, root: YamlMap): string[] {
  const value = root.tools;
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) {
    f.report(["tools"], "invalid_type", '"tools" must be a list of host tool names, e.g. tools: [lint]');
    return [];
  }
  const out: string[] = [];
  value.forEach((item, index) => {
    if (typeof item !== "string" || item.trim() === "")
      f.report(["tools", index], "invalid_type", `"tools[${index}]" must be a host tool name`);
    else if (!out.includes(item)) out.push(item);
  });
  return out;
}

export const AGENT_ACCESS: readonly AgentAccess[] = ["read", "edit"];

/**
 * `agent_access` of a pipeline: what the built-in tools of an agent CLI (`claude-code`, `codex`)
 * may do in the worktree. `read` (the default) reads and searches; `edit` also changes files.
 * Neither gives the agent a shell with network access or a credential to push with.
 */
export function readAgentAccess(f: ConfigFile, root: YamlMap): AgentAccess | undefined {
  return oneOf(f, root, "agent_access", [], AGENT_ACCESS, {
    hint: " - read (the default: read and search the worktree) or edit (also change its files)",
  });
}

/** Each name of a pipeline's `tools` must be a `host_tools` entry of daemon.yaml. */
export function checkPipelineTools(
  f: ConfigFile,
  tools: readonly string[],
  hostTools: Readonly<Record<string, HostTool>>,
): void {
  for (const [index, name] of tools.entries()) {
    if (hostTools[name]) continue;
    f.report(
      ["tools", index],
      "unknown_tool",
      `host tool ${quote(name)} at "tools[${index}]" is not defined - add it to "host_tools" in daemon.yaml (defined: ${Object.keys(hostTools).join(", ") || "none"})`,
    );
  }
}

/** `max_turns` of an `openai` target: how many model calls one agent loop may make. */
export function readMaxTurns(f: ConfigFile, raw: YamlMap, path: KeyPath): number | undefined {
  return (
    int(f, raw, "max_turns", path, { min: 1, max: 1000 }) ??
    (raw.max_turns == null ? DEFAULT_MAX_TURNS : undefined)
  );
}

/**
 * `auth_failure: { exit_codes: [77], stderr: "401|invalid api key" }` of a `command` target: the
 * agent's exit that says its credential was refused. `stderr` is a case-insensitive regular expression.
 */
export function readAuthFailure(
  f: ConfigFile,
  raw: YamlMap,
  path: KeyPath,
): CommandTarget["authFailure"] | null | undefined {
  if (raw.auth_failure == null) return null;
  const where = [...path, "auth_failure"];
  const block = mapping(
    f,
    raw.auth_failure,
    where,
    ' such as { exit_codes: [77], stderr: "401|invalid api key" }',
  );
  if (!block) return undefined;
  checkKeys(f, block, where, ["exit_codes", "stderr"]);
  let ok = true;
  const exitCodes: number[] = [];
  if (block.exit_codes != null) {
    if (!Array.isArray(block.exit_codes)) {
      f.report(
        [...where, "exit_codes"],
        "invalid_type",
        `"${formatPath([...where, "exit_codes"])}" must be a list of exit codes, e.g. [77]`,
      );
      ok = false;
    } else {
      block.exit_codes.forEach((code, index) => {
        if (typeof code === "number" && Number.isInteger(code) && code > 0 && code < 256)
          exitCodes.push(code);
        else {
          f.report(
            [...where, "exit_codes", index],
            "invalid_value",
            `"${formatPath([...where, "exit_codes", index])}" must be an exit code from 1 to 255`,
          );
          ok = false;
        }
      });
    }
  }
  const stderr = str(f, block, "stderr", where);
  if (stderr !== undefined) {
    try {
      new RegExp(stderr, "i");
    } catch (error) {
      f.report(
        [...where, "stderr"],
        "invalid_value",
        `"${formatPath([...where, "stderr"])}" is not a valid regular expression: ${(error as Error).message}`,
      );
      ok = false;
    }
  }
  if (exitCodes.length === 0 && stderr === undefined) {
    f.report(where, "required", `"${formatPath(where)}" needs "exit_codes", "stderr" or both`);
    ok = false;
  }
  return ok ? { exitCodes, ...(stderr !== undefined ? { stderr } : {}) } : undefined;
}

/** A credential's `env`: the variable a `command` agent reads it from. */
export function readCredentialEnv(f: ConfigFile, entry: YamlMap, itemPath: KeyPath): string | undefined {
  const env = str(f, entry, "env", itemPath);
  if (env === undefined) return undefined;
  if (!ENV_NAME.test(env) || env.startsWith("SVC_")) {
    f.report(
      [...itemPath, "env"],
      "invalid_value",
      env.startsWith("SVC_")
        ? `env "${env}" is reserved - names starting SVC_ belong to svc; rename the variable`
        : `"${formatPath([...itemPath, "env"])}" must be a variable name (letters, digits and _, not starting with a digit)`,
    );
    return undefined;
  }
  return env;
}
