import { appendFile } from "node:fs/promises";
import type { AgentCliTarget, Pipeline } from "../../../shared/config/types.ts";
import { type Diagnostic, diagnostic } from "../../../shared/diagnostics.ts";
import type { CredentialCooldowns } from "../../credentials/cooldowns.ts";
import type { CredentialSecrets } from "../../credentials/secrets.ts";
import type { ProcessEngine } from "../../exec/engine.ts";
import type { ProcessOutcome } from "../../exec/process.ts";
import type { GatewayAccount } from "../../gateway/account.ts";
import type { ModelGateway } from "../../gateway/gateway.ts";
import type { Prompt } from "../../run/prompt.ts";
import type { RunAccess } from "../../run/run-token.ts";
import type { AgentOutcome } from "../outcome.ts";
import { claudeCode } from "./claude-code.ts";
import type { AgentCli, CliContext, CliReport } from "./cli.ts";
import { codex } from "./codex.ts";
import { cliEnvironment, freshHome } from "./isolation.ts";

export interface AgentCliRunInput {
  target: AgentCliTarget;
  pipeline: Pick<Pipeline, "result" | "agentAccess" | "sandbox"> &
    Partial<Pick<Pipeline, "orchestrator" | "review" | "outputs">>;
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
  /** the attempt's account at the worker's gateway, which each credential gets a token of */
  gateway: { account: GatewayAccount; registry: Pick<ModelGateway, "clientUrl"> };
  /** the gateway's address as the agent's process reaches it */
  gatewayUrl: string;
}

const CLIS: Record<AgentCliTarget["runtime"], AgentCli> = { "claude-code": claudeCode, codex };

/** Longest CLI error text kept in a diagnostic: the transcript holds all of it. */
const ERROR_TEXT = 300;

/**
 * The `claude-code` and `codex` runtimes: the CLI runs once per usable credential, in the
 * worktree, with a private HOME, talking to the worker's gateway with a token of the attempt's
 * own; the credential stays in the worker. The gateway decides the credential's state from the
 * model API's answer, as the contract's credential table says (a 401 or 403 dead, a 429 or an
 * overload cooling): a refused credential hands over to the next one; any other failure hands the
 * run to the pipeline's next target without touching the credential.
 */
export async function runAgentCli(input: AgentCliRunInput): Promise<AgentOutcome> {
  const { target, cooldowns, secrets } = input;
  const cli = CLIS[target.runtime];
  for (const credential of target.credentials) {
    if (!cooldowns.isUsable(target.name, credential.name)) continue;
    const key = secrets.get(target.name, credential.name);
    if (key === undefined) continue;
    const home = await freshHome(input.agentDir);
    const lease = input.gateway.account.lease(target, credential.name, key);
    const baseUrl = input.gateway.registry.clientUrl(lease, input.gatewayUrl);
    const context: CliContext = { ...input, home, key: lease.token, baseUrl };
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
    // the gateway marked the credential (dead or cooling) when the model API refused it
    if (lease.refusal) {
      await appendFile(
        input.transcriptFile,
        `# credential ${credential.name} refused: ${lease.refusal.reason}\n`,
      );
      continue;
    }
    const error = report.error === undefined ? undefined : redact(redact(report.error, key), lease.token);
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
