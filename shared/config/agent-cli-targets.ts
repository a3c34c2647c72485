import { isAbsolute } from "node:path";
import { readMaxTurns } from "./agent-tools.ts";
import { checkKeys, str, type YamlMap } from "./read.ts";
import { type ConfigFile, formatPath, type KeyPath } from "./source.ts";
import type { AgentCliTarget, TargetCredential } from "./types.ts";

export const AGENT_CLI_RUNTIMES = ["claude-code", "codex"] as const;

const KEYS = ["runtime", "model", "base_url", "bin", "timeout", "max_turns", "credentials", "price"];

export interface AgentCliParts {
  name: string;
  runtime: AgentCliTarget["runtime"];
  timeoutMs: number | undefined;
  credentials: TargetCredential[] | undefined;
  httpUrl: (key: string) => string | undefined;
}

/**
 * `targets.<name>` with `runtime: claude-code` or `runtime: codex`: `model` (required),
 * `base_url` (a gateway; optional), `bin` (an absolute path; default the CLI on PATH), `timeout`,
 * `max_turns` and `credentials`. A credential's `env` is refused: svc exports it as the CLI
 * expects (ANTHROPIC_API_KEY, or the Codex provider's env_key).
 */
export function readAgentCliTarget(
  f: ConfigFile,
  raw: YamlMap,
  path: KeyPath,
  parts: AgentCliParts,
): AgentCliTarget | undefined {
  const { name, runtime, timeoutMs, credentials } = parts;
  checkKeys(f, raw, path, KEYS);
  const model = str(f, raw, "model", path, {
    required: true,
    hint: ` - name the model the CLI asks for, e.g. model: ${runtime === "codex" ? "gpt-5" : "claude-sonnet-4-5"}`,
  });
  const baseUrl = raw.base_url == null ? undefined : parts.httpUrl("base_url");
  const bin = str(f, raw, "bin", path);
  if (bin !== undefined && !isAbsolute(bin)) {
    f.report(
      [...path, "bin"],
      "invalid_value",
      `"${formatPath([...path, "bin"])}" must be an absolute path to the ${runtime} executable (got "${bin}") - or leave it out to use the one on PATH`,
    );
    return undefined;
  }
  if (runtime === "codex" && raw.max_turns != null) {
    f.report(
      [...path, "max_turns"],
      "unknown_key",
      `"${formatPath([...path, "max_turns"])}" applies to claude-code targets only - codex has no turn limit of its own; bound the run with "timeout" and delete the key`,
    );
    return undefined;
  }
  const maxTurns = raw.max_turns == null ? null : readMaxTurns(f, raw, path);
  const withEnv = (credentials ?? []).findIndex((credential) => credential.env !== undefined);
  if (withEnv >= 0) {
    f.report(
      [...path, "credentials", withEnv, "env"],
      "unknown_key",
      `"${formatPath([...path, "credentials", withEnv, "env"])}" is for command targets - a ${runtime} target exports its credential as ${runtime === "codex" ? "the Codex provider's env_key" : "ANTHROPIC_API_KEY"}; delete the key`,
    );
    return undefined;
  }
  if (credentials?.length === 0) {
    f.report(
      [...path, "credentials"],
      "required",
      `"${formatPath([...path, "credentials"])}" must list at least one { name, secret | secret_ref } - the ${runtime} CLI needs an API key`,
    );
    return undefined;
  }
  if (!model || timeoutMs === undefined || !credentials || maxTurns === undefined) return undefined;
  if (raw.base_url != null && !baseUrl) return undefined;
  return {
    ...{ name, runtime, model, timeoutMs, credentials },
    ...(baseUrl ? { baseUrl } : {}),
    ...(bin ? { bin } : {}),
    ...(maxTurns !== null ? { maxTurns } : {}),
  };
}
