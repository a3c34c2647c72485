import { isAbsolute, resolve } from "node:path";
import type { CommandTarget } from "../../shared/config/types.ts";
import { diagnostic } from "../../shared/diagnostics.ts";
import { type ProcessSpec, runProcessTree } from "../process-tree.ts";
import { lastJsonObject } from "../result-check.ts";
import type { AgentOutcome } from "./outcome.ts";

export interface CommandRunInput {
  target: CommandTarget;
  configDir: string;
  cwd: string;
  env: Record<string, string>;
  stdin: string;
  transcriptFile: string;
  signal: AbortSignal;
  spawner?: ProcessSpec["spawner"];
}

/**
 * The `command` runtime: the target's argv, without a shell, in the worktree, the prompt on stdin;
 * the last JSON object on stdout is the result. A relative executable (`./bin/agent`) is resolved
 * against the configuration directory, where the operator keeps it.
 */
export async function runCommandAgent(input: CommandRunInput): Promise<AgentOutcome> {
  const [executable, ...args] = input.target.command;
  const file =
    executable && !isAbsolute(executable) && executable.includes("/")
      ? resolve(input.configDir, executable)
      : executable;
  const outcome = await runProcessTree({
    argv: [file ?? "", ...args],
    cwd: input.cwd,
    env: input.env,
    stdin: input.stdin,
    logFile: input.transcriptFile,
    captureStdout: true,
    timeoutMs: input.target.timeoutMs,
    signal: input.signal,
    spawner: input.spawner,
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
