import { appendFile } from "node:fs/promises";
import type { Pipeline, Target } from "../../shared/config/types.ts";
import type { Workspace } from "../../shared/workspace-layout.ts";
import { type ResolvedEvent, runIdentity } from "../event/resolve.ts";
import type { ProcessEngine } from "../exec/engine.ts";
import type { GatewayAccount } from "../gateway/account.ts";
import { describeSpend, tokenUsageOf } from "../gateway/ledger.ts";
import { runAgentCli } from "../runtimes/agent-cli/run.ts";
import { runCommandAgent } from "../runtimes/command.ts";
import { runOpenAiAgent } from "../runtimes/openai.ts";
import type { AgentOutcome } from "../runtimes/outcome.ts";
import { type Prompt, promptText } from "./prompt.ts";
import type { RunSecrets } from "./run-secrets.ts";
import { type RunAccess, type RunTokenRequest, runTokenLifetimeMs, withRunToken } from "./run-token.ts";
import type { RunDeps } from "./types.ts";

/** What an agent's runtime needs of the invocation or orchestrated task it runs for. */
export interface AgentContext {
  deps: RunDeps;
  invocationId: string;
  pipeline: Pipeline;
  paths: Workspace;
  event: ResolvedEvent;
  /** the base of the agent's environment (the run's: its event, its workspace) */
  env: Record<string, string>;
  /** where the agent's process runs */
  engine: ProcessEngine;
  /** stops the agent: cancellation, shutdown, a deadline */
  signal: AbortSignal;
  /** the run's secrets: the agent's run token joins them before the agent starts */
  secrets: RunSecrets;
}

/** What the run token of an agent on `target` is bound to (run-token.ts). */
export function tokenRequest(
  agent: AgentContext,
  target: Target,
  binding: RunTokenRequest["binding"] | undefined,
): Omit<RunTokenRequest, "db"> {
  const { deps, pipeline, paths } = agent;
  return {
    // the daemon as the agent's process reaches it: a container's address may not be the worker's.
    // The openai loop runs in the worker itself, sandboxed pipeline or not: the worker's address
    daemonUrl: target.runtime === "openai" ? deps.daemonUrl : agent.engine.daemonUrl(deps.daemonUrl),
    invocationId: agent.invocationId,
    pipeline,
    agent: runIdentity(pipeline, agent.event.context).agent,
    repo: agent.event.context.repo,
    outsider: agent.event.context.outsider,
    worktree: paths.checkout,
    agentDir: paths.agentDir,
    lifetimeMs: runTokenLifetimeMs(target),
    ...(binding ? { binding } : {}),
  };
}

/** The target's runtime with a run token stored for it and revoked when it ends (an orchestrated task's agent). */
export function runRuntime(
  agent: AgentContext,
  target: Target,
  prompt: Prompt,
  transcript: string,
  binding: NonNullable<RunTokenRequest["binding"]> & { task: string },
): Promise<AgentOutcome> {
  return withRunToken({ db: agent.deps.records, ...tokenRequest(agent, target, binding) }, (token) =>
    startRuntime(agent, target, prompt, transcript, token, binding.task),
  );
}

/**
 * The target's runtime: a command in the worktree, an agent CLI (claude-code, codex), or the openai
 * agent loop. Each gets the run token and the tool protocol's address (run-token.ts): agent
 * processes only, never setup steps. The model calls of the last three pass the worker's gateway
 * (worker/gateway/) under the attempt's account (task `taskId`): what they used is the outcome's
 * usage, and a spent budget ends the attempt `budget_exceeded` before it starts or at its next
 * model request.
 */
export async function startRuntime(
  agent: AgentContext,
  target: Target,
  prompt: Prompt,
  transcript: string,
  token: RunAccess,
  taskId: string,
): Promise<AgentOutcome> {
  const { deps, paths, engine } = agent;
  // the token is in the agent's environment and mcp.json: whatever it prints of them is redacted
  agent.secrets.add(token.token);
  const common = {
    cooldowns: deps.cooldowns,
    secrets: deps.secrets,
    transcriptFile: transcript,
  };
  if (target.runtime === "command") {
    // a command agent calls its model API itself: the gateway does not see it (docs/worker.md)
    return runCommandAgent({
      ...{ ...common, target, engine, signal: agent.signal },
      configDir: deps.config.dir,
      cwd: paths.checkout,
      env: { ...agent.env, ...token.env },
      stdin: promptText(prompt),
    });
  }
  const account = await deps.gateway.account({
    invocationId: agent.invocationId,
    taskId,
    budget: agent.pipeline.budget,
    // its model answers recorded (a live run) or replayed (a backtest's candidate): recording.ts
    answers: { record: agent.pipeline.recordAnswers === true },
    // a gateway token is the agent's key: what it prints of it is redacted like its run token
    onToken: (value) => agent.secrets.add(value),
  });
  try {
    const spent = account.ledger.overrun();
    if (spent) account.refuse(spent);
    const outcome = spent
      ? ({ kind: "aborted" } as const)
      : await runOnGateway(agent, target, prompt, token, account, common);
    return await settled(outcome, account, transcript);
  } finally {
    await account.close();
  }
}

function runOnGateway(
  agent: AgentContext,
  target: Exclude<Target, { runtime: "command" }>,
  prompt: Prompt,
  token: RunAccess,
  account: GatewayAccount,
  common: Pick<AgentCliRunCommon, "cooldowns" | "secrets" | "transcriptFile">,
): Promise<AgentOutcome> {
  const { deps, paths, engine } = agent;
  // a spent budget stops the agent as a cancellation would
  const signal = AbortSignal.any([agent.signal, account.signal]);
  const gateway = { account, registry: deps.gateway };
  if (target.runtime === "openai")
    return runOpenAiAgent({ ...common, signal, target, prompt, tools: token, gateway });
  return runAgentCli({
    ...{ ...common, signal, target, prompt, engine, gateway },
    // the gateway as the agent's processes reach it: a container's view may differ (exec/engine.ts)
    gatewayUrl: engine.modelGatewayUrl?.(deps.gateway.url) ?? deps.gateway.url,
    ...{ cwd: paths.checkout, agentDir: paths.agentDir, configDir: deps.config.dir },
    pipeline: agent.pipeline,
    runEnv: agent.env,
    access: token,
  });
}

type AgentCliRunCommon = Parameters<typeof runAgentCli>[0];

/** The outcome with the usage the gateway read; a spent budget makes it `budget_exceeded`. */
async function settled(
  outcome: AgentOutcome,
  account: GatewayAccount,
  transcript: string,
): Promise<AgentOutcome> {
  const spend = await account.close();
  const usage = spend.requests > 0 ? { usage: tokenUsageOf(spend) } : {};
  if (spend.requests > 0) await appendFile(transcript, `# gateway: ${describeSpend(spend)}\n`);
  const exceeded = account.exceeded();
  if (exceeded) {
    await appendFile(transcript, `# ${exceeded.message}\n`);
    return { kind: "failed", diagnostic: exceeded, ...usage };
  }
  const { usage: _reported, ...rest } = outcome;
  return { ...rest, ...usage } as AgentOutcome;
}
