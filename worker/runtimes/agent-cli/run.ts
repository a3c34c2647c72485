import { appendFile } from "node:fs/promises";
import type { AgentCliTarget, Pipeline } from "../../../shared/config/types.ts";
import { retryAfter } from "../../../shared/credentials/classify.ts";
import { type Diagnostic, diagnostic } from "../../../shared/diagnostics.ts";
import type { CredentialCooldowns } from "../../credentials/cooldowns.ts";
import type { CredentialSecrets } from "../../credentials/secrets.ts";
import type { ProcessEngine } from "../../exec/engine.ts";
import type { ProcessOutcome } from "../../exec/process.ts";
import type { Prompt } from "../../run/prompt.ts";
import type { RunAccess } from "../../run/run-token.ts";
import type { AgentOutcome } from "../outcome.ts";
import { claudeCode } from "./claude-code.ts";
import type { AgentCli, CliContext, CliReport } from "./cli.ts";
import { codex } from "./codex.ts";
import { cliEnvironment, freshHome } from "./isolation.ts";

export interface AgentCliRunInput {
  target: AgentCliTarget;
  pipeline: Pick<Pipeline, "result" | "agentAccess" | "sandbox">;
  prompt: Prompt;
  /** the worktree: the CLI runs there */
  cwd: string;
  /** the configuration directory: on the host, Codex's profile hides it (confinement.ts) */
  configDir: string;
  /** the agent's own folder: its HOME, its token file, its CLI's files (Workspace.agentDir) */
  agentDir: string;
  runEnv: Record<string, string>;
  access: RunAccess;
  cooldowns: CredentialCooldowns;
  secrets: CredentialSecrets;
  transcriptFile: string;
  signal: AbortSignal;
  /** where the agent's process runs: the worker's host or the run's container */
  engine: ProcessEngine;
}

const CLIS: Record<AgentCliTarget["runtime"], AgentCli> = { "claude-code": claudeCode, codex };

/** Longest CLI error text kept in a diagnostic: the transcript holds all of it. */
const ERROR_TEXT = 300;

/**
 * The `claude-code` and `codex` runtimes: the CLI runs once per usable credential, in the
 * worktree, with a private HOME. How it ended decides what happens next, as the contract's
 * credential table says: a 401 or 403 from the model API (as the CLI reports it) marks the
 * credential dead and a 429 or an overload parks it cooling, and the next credential is tried;
 * any other failure hands the run to the pipeline's next target without touching the credential.
 */
export async function runAgentCli(input: AgentCliRunInput): Promise<AgentOutcome> {
  const { target, cooldowns, secrets } = input;
  const cli = CLIS[target.runtime];
  for (const credential of target.credentials) {
    if (!cooldowns.isUsable(target.name, credential.name)) continue;
    const key = secrets.get(target.name, credential.name);
    if (key === undefined) continue;
    const home = await freshHome(input.agentDir);
    const context: CliContext = { ...input, home, key };
    const launch = await cli.launch(context);
    await appendFile(
      input.transcriptFile,
      `# ${target.runtime} on target ${target.name} (credential ${credential.name})\n`,
    );
    const outcome = await input.engine.run({
      argv: launch.argv,
      cwd: input.cwd,
      env: cliEnvironment(input.runEnv, home, input.access, launch.env),
      stdin: launch.stdin,
      logFile: input.transcriptFile,
      captureStdout: true,
      timeoutMs: target.timeoutMs,
      signal: input.signal,
    });
    const report = await cli.report(outcome.stdout, context);
    await appendFile(input.transcriptFile, `${report.summary.join("\n")}\n`);
    const refusal = credentialRefusal(report);
    if (refusal?.kind === "dead") {
      await cooldowns.markDead(target.name, credential.name, refusal.reason);
      continue;
    }
    if (refusal?.kind === "cooling") {
      await cooldowns.markCooling(
        target.name,
        credential.name,
        retryAfter(undefined, new Date()),
        refusal.reason,
      );
      continue;
    }
    const error = report.error === undefined ? undefined : redact(report.error, key);
    const ended = await outcomeOf(target, outcome, { ...report, error }, input.transcriptFile);
    return report.usage ? { ...ended, usage: report.usage } : ended;
  }
  return { kind: "unavailable", reason: `no usable credential on target ${target.name}` };
}

/** API keys as error messages quote them (OpenAI masks the middle of `sk-…`): none reaches a diagnostic. */
const KEY_LIKE = /\b(sk|sk-ant|sk-proj)-[A-Za-z0-9_*.-]{6,}/g;

function redact(text: string, key: string): string {
  return text.split(key).join("[credential]").replace(KEY_LIKE, "[credential]");
}

/** What the CLI's report says about the credential, by the contract's credential table. */
function credentialRefusal(report: CliReport): { kind: "dead" | "cooling"; reason: string } | undefined {
  const status = report.apiStatus;
  if (status === 401 || status === 403) return { kind: "dead", reason: `HTTP ${status}` };
  if (status === 429) return { kind: "cooling", reason: "HTTP 429" };
  if (report.overloaded || status === 503 || status === 529)
    return { kind: "cooling", reason: `overloaded${status ? ` (HTTP ${status})` : ""}` };
  return undefined;
}

async function outcomeOf(
  target: AgentCliTarget,
  outcome: ProcessOutcome,
  report: CliReport,
  transcript: string,
): Promise<AgentOutcome> {
  const name = target.name;
  if (outcome.aborted) return { kind: "aborted" };
  const failed = (failure: Diagnostic): AgentOutcome => ({ kind: "failed", diagnostic: failure });
  if (outcome.timedOut) {
    return failed(
      diagnostic(
        "agent_timeout",
        `the agent on target ${name} ran longer than its timeout of ${target.timeoutMs} ms; its process tree was killed`,
        { target: name, metadata: { timeoutMs: target.timeoutMs } },
      ),
    );
  }
  if (report.turnLimit) {
    return failed(
      diagnostic(
        "agent_turn_limit",
        `the agent on target ${name} reached its limit of ${target.maxTurns} turns without a final answer; raise targets.${name}.max_turns or simplify the task`,
        { target: name, metadata: { maxTurns: target.maxTurns } },
      ),
    );
  }
  if (report.result && outcome.exitCode === 0) return { kind: "result", result: report.result };
  if (outcome.exitCode === 0 && !report.error) {
    // the CLI finished but its answer is no JSON object: its final text goes into the artifact
    await appendFile(transcript, `# final message (no JSON object):\n${report.finalText ?? "(none)"}\n`);
    return failed(
      diagnostic(
        "result_invalid",
        `the agent on target ${name} answered no JSON object; its final message is in the transcript artifact`,
        {
          target: name,
          path: "/",
        },
      ),
    );
  }
  const why = outcome.spawnError
    ? `could not start: ${outcome.spawnError}`
    : `failed (exit ${outcome.exitCode ?? outcome.signal}): ${(report.error ?? "see the transcript artifact").slice(0, ERROR_TEXT)}`;
  const failure = diagnostic("agent_failed", `the ${target.runtime} agent on target ${name} ${why}`, {
    target: name,
    metadata: { exitCode: outcome.exitCode, ...(report.apiStatus ? { apiStatus: report.apiStatus } : {}) },
  });
  return { kind: "unavailable", reason: failure.message, diagnostic: failure };
}
