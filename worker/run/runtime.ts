import type { Pipeline, Target } from "../../shared/config/types.ts";
import type { Workspace } from "../../shared/workspace-layout.ts";
import { type ResolvedEvent, runIdentity } from "../event/resolve.ts";
import type { ProcessEngine } from "../exec/engine.ts";
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
    // the daemon as the agent's process reaches it: a container's address may not be the worker's
    daemonUrl: agent.engine.daemonUrl(deps.daemonUrl),
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
  binding?: RunTokenRequest["binding"],
): Promise<AgentOutcome> {
  return withRunToken({ db: agent.deps.records, ...tokenRequest(agent, target, binding) }, (token) =>
    startRuntime(agent, target, prompt, transcript, token),
  );
}

/**
 * The target's runtime: a command in the worktree, an agent CLI (claude-code, codex), or the openai
 * agent loop. Each gets the run token and the tool protocol's address (run-token.ts): agent
 * processes only, never setup steps.
 */
export function startRuntime(
  agent: AgentContext,
  target: Target,
  prompt: Prompt,
  transcript: string,
  token: RunAccess,
): Promise<AgentOutcome> {
  const { deps, paths, engine } = agent;
  // the token is in the agent's environment and mcp.json: whatever it prints of them is redacted
  agent.secrets.add(token.token);
  const common = {
    cooldowns: deps.cooldowns,
    secrets: deps.secrets,
    transcriptFile: transcript,
    signal: agent.signal,
  };
  switch (target.runtime) {
    case "command":
      return runCommandAgent({
        ...{ ...common, target, engine },
        configDir: deps.config.dir,
        cwd: paths.checkout,
        env: { ...agent.env, ...token.env },
        stdin: promptText(prompt),
      });
    case "openai":
      return runOpenAiAgent({ ...common, target, prompt, tools: token });
    default:
      return runAgentCli({
        ...{ ...common, target, prompt, engine },
        ...{ cwd: paths.checkout, agentDir: paths.agentDir, configDir: deps.config.dir },
        pipeline: agent.pipeline,
        runEnv: agent.env,
        access: token,
      });
  }
}
