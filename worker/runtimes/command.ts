import { appendFile } from "node:fs/promises";
import { isAbsolute, resolve } from "node:path";
import type { CommandTarget } from "../../shared/config/types.ts";
import { diagnostic } from "../../shared/diagnostics.ts";
import type { CredentialCooldowns } from "../credentials/cooldowns.ts";
import type { CredentialSecrets } from "../credentials/secrets.ts";
import type { ProcessEngine } from "../exec/engine.ts";
import { lastJsonObject } from "../run/result-check.ts";
import { authFailureReason, outputSince, transcriptSize } from "./command-credentials.ts";
import type { AgentOutcome } from "./outcome.ts";

export interface CommandRunInput {
  /** the target's credentials, when it declares any: cooling and dead ones are skipped */
  cooldowns?: CredentialCooldowns;
  secrets?: CredentialSecrets;
  target: CommandTarget;
  configDir: string;
  cwd: string;
  env: Record<string, string>;
  stdin: string;
  transcriptFile: string;
  signal: AbortSignal;
  /** where the agent's process runs: the worker's host or the run's container */
  engine: ProcessEngine;
}

/**
 * A `command` target with `credentials` runs the agent with the first usable one exported under its
 * declared `env` name. An exit the target declares an authentication failure (`auth_failure`)
 * marks that credential dead, exactly as a 401 does for `openai`, and the next one is tried; no
 * usable credential left means the target is unavailable.
 */
export async function runCommandAgent(input: CommandRunInput): Promise<AgentOutcome> {
  const { target, cooldowns, secrets } = input;
  if (target.credentials.length === 0 || !cooldowns || !secrets) return runAgentProcess(input, {});
  for (const credential of target.credentials) {
    if (!cooldowns.isUsable(target.name, credential.name)) continue;
    const value = secrets.get(target.name, credential.name);
    if (value === undefined) continue;
    const from = await transcriptSize(input.transcriptFile);
    const outcome = await runAgentProcess(input, credential.env ? { [credential.env]: value } : {});
    if (outcome.kind !== "failed" || outcome.diagnostic.code !== "agent_failed") return outcome;
    const exitCode = (outcome.diagnostic.metadata as { exitCode?: number | null } | undefined)?.exitCode;
    const reason = authFailureReason(target, exitCode ?? null, await outputSince(input.transcriptFile, from));
    if (!reason) return outcome;
    await cooldowns.markDead(target.name, credential.name, reason);
    await appendFile(input.transcriptFile, `\n# credential ${credential.name} refused: ${reason}\n`);
  }
  return { kind: "unavailable", reason: `no usable credential on target ${target.name}` };
}

/**
 * The `command` runtime: the target's argv, without a shell, in the worktree, the prompt on stdin;
 * the last JSON object on stdout is the result. A relative executable (`./bin/agent`) is resolved
 * against the configuration directory, where the operator keeps it.
 */
async function runAgentProcess(
  input: CommandRunInput,
  credentialEnv: Record<string, string>,
): Promise<AgentOutcome> {
  const [executable, ...args] = input.target.command;
  const file =
    executable && !isAbsolute(executable) && executable.includes("/")
      ? resolve(input.configDir, executable)
      : executable;
  const outcome = await input.engine.run({
    argv: [file ?? "", ...args],
    cwd: input.cwd,
    env: { ...input.env, ...credentialEnv },
    stdin: input.stdin,
    logFile: input.transcriptFile,
    captureStdout: true,
    timeoutMs: input.target.timeoutMs,
    signal: input.signal,
  });
  const target = input.target.name;
  if (outcome.aborted) return { kind: "aborted" };
  if (outcome.timedOut) {
    return {
      kind: "failed",
      diagnostic: diagnostic(
        "agent_timeout",
        `the agent on target ${target} ran longer than its timeout of ${input.target.timeoutMs} ms; its process tree was killed`,
        { target, metadata: { timeoutMs: input.target.timeoutMs } },
      ),
    };
  }
  if (outcome.spawnError) {
    return {
      kind: "failed",
      diagnostic: diagnostic(
        "agent_failed",
        `the agent of target ${target} could not start: ${outcome.spawnError}`,
        {
          target,
        },
      ),
    };
  }
  if (outcome.exitCode !== 0) {
    return {
      kind: "failed",
      diagnostic: diagnostic(
        "agent_failed",
        `the agent on target ${target} exited with ${outcome.exitCode ?? outcome.signal}; see the transcript artifact`,
        { target, metadata: { exitCode: outcome.exitCode, signal: outcome.signal } },
      ),
    };
  }
  const result = lastJsonObject(outcome.stdout);
  if (!result) {
    return {
      kind: "failed",
      diagnostic: diagnostic(
        "result_invalid",
        `the agent on target ${target} printed no JSON object on stdout`,
        {
          target,
          path: "/",
        },
      ),
    };
  }
  return { kind: "result", result };
}
