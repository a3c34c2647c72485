import { writeFile } from "node:fs/promises";
import type { OrchestratedTask } from "../../db/orchestrated-tasks.ts";
import { setTaskTarget } from "../../db/orchestrated-tasks.ts";
import type { TokenUsage } from "../../db/tasks.ts";
import { codehostPrincipalId } from "../../shared/config/outputs.ts";
import type { Pipeline, Target } from "../../shared/config/types.ts";
import type { Diagnostic } from "../../shared/diagnostics.ts";
import type { Workspace } from "../../shared/workspace-layout.ts";
import type { BaseInstructions } from "../checkout/instructions.ts";
import { withCommand } from "../event/command.ts";
import { eventOfRun, type ResolvedEvent } from "../event/resolve.ts";
import type { RunEngines } from "../exec/engine.ts";
import { openSandbox } from "../exec/sandbox/engine.ts";
import { identityToken } from "../outputs/tokens.ts";
import { withDeadline } from "../run/deadline.ts";
import { eventEnvironment } from "../run/environment.ts";
import { agentTimeout, onTargets, type Unavailable } from "../run/failover.ts";
import { assemblePrompt, type Prompt } from "../run/prompt.ts";
import type { RunSecrets } from "../run/run-secrets.ts";
import { type AgentContext, runRuntime } from "../run/runtime.ts";
import type { RunDeps } from "../run/types.ts";
import { checkOutEvent } from "../run/workspace.ts";

/** How a task ended: recorded with its result or diagnostic, queued again, or left as cancelled. */
export type TaskEnd = (
  | { kind: "completed"; result: unknown }
  | { kind: "failed"; diagnostic: Diagnostic }
  | { kind: "released" }
  | { kind: "stopped" }
) & {
  /** what its attempts' model calls used, summed (read at the worker's gateway) */
  usage?: TokenUsage;
};

export interface TaskRun {
  task: OrchestratedTask;
  workload: { id: string; trigger_id: string | null; pipeline: string };
  pipeline: Pipeline;
  paths: Workspace;
  /** the task's watch: cancellation, shutdown, a lost claim */
  signal: AbortSignal;
  cancelled: () => boolean;
  transcript: string;
  /** the values the task's stored transcript is redacted of (its tokens join them) */
  secrets: RunSecrets;
}

/**
 * The task's agent: its own workspace at the run's revision, the pipeline's agent with the task's
 * skill and instructions, on the pipeline's `targets` in order (failover.ts), each attempt with its
 * own run token (which cannot create tasks) and the task's deadline. Its processes run on the
 * worker's host, or, for a sandboxed pipeline, in an agent container of the task's own (labelled
 * with the task, so the sweeper judges it by the task's row, not its invocation's).
 */
export async function runTaskAgent(deps: RunDeps, run: TaskRun): Promise<TaskEnd> {
  const { task, workload, pipeline, paths } = run;
  const event = withCommand(await eventOfRun(deps.records, { workload, pipeline }), deps.config, pipeline);
  const checkout = await checkOutEvent(deps, paths, event.context, pipeline, { what: " for the task" });
  if (checkout.failure) return { kind: "failed", diagnostic: checkout.failure };
  // the checkout's credential reached git alone; should a host echo it, it is redacted too
  if (checkout.result?.secret) run.secrets.add(checkout.result.secret);
  const identity = await identityEnv(deps, pipeline, task, event.context.repo);
  // a principal's token is the agent's: what it prints of it is redacted like its run token
  if (identity.GH_TOKEN) run.secrets.add(identity.GH_TOKEN);
  const env = { ...eventEnvironment(paths, event, pipeline, "", checkout.result?.base), ...identity };
  // a task has no setup steps: its sandbox's agent container starts with its first process
  const engines: RunEngines = pipeline.sandbox
    ? openSandbox(deps, pipeline.sandbox, { paths, invocationId: task.invocationId, taskId: task.id })
    : { setup: deps.host, agent: deps.host };
  const agent: AgentContext = {
    ...{ deps, invocationId: task.invocationId, pipeline, paths, event, env, secrets: run.secrets },
    engine: engines.agent,
    signal: run.signal,
  };
  try {
    const prompt = taskPrompt(deps, pipeline, task, event, checkout.result?.instructions);
    const end = await onAgentTargets(agent, run, prompt);
    // a container that never started ends the task with its own diagnostic, whatever the runtime made of it
    const failure = engines.agent.failure();
    return failure && end.kind === "failed" ? { ...end, diagnostic: failure } : end;
  } finally {
    await Promise.all([engines.setup.close(), engines.agent.close()]);
  }
}

async function onAgentTargets(agent: AgentContext, run: TaskRun, prompt: Prompt): Promise<TaskEnd> {
  const { deps, pipeline } = agent;
  await writeFile(run.transcript, "");
  // an orchestrator may run on targets of its own; its tasks run on the pipeline's
  const used: UsageSum = {};
  const end = await onTargets(
    deps,
    pipeline.targets,
    (target) => attempt(agent, run, target, prompt, used),
    `pipeline ${pipeline.name} could run the task`,
  );
  const usage = used.total ? { usage: used.total } : {};
  if (end.kind !== "exhausted") return { ...end, ...usage };
  // no target had a usable credential: the task waits in its lane, as an invocation does
  return end.failure ? { kind: "failed", diagnostic: end.failure, ...usage } : { kind: "released" };
}

/** The usage of a task's attempts so far (a failover pays twice). */
interface UsageSum {
  total?: TokenUsage;
}

function addUsage(sum: UsageSum, usage: TokenUsage | undefined): void {
  if (!usage) return;
  const total = sum.total ?? { input_tokens: 0, output_tokens: 0 };
  const add = (a: number | undefined, b: number | undefined) => (a ?? 0) + (b ?? 0);
  sum.total = {
    input_tokens: total.input_tokens + usage.input_tokens,
    output_tokens: total.output_tokens + usage.output_tokens,
    cache_read_tokens: add(total.cache_read_tokens, usage.cache_read_tokens),
    cache_write_tokens: add(total.cache_write_tokens, usage.cache_write_tokens),
    requests: add(total.requests, usage.requests),
    ...(total.cost_usd !== undefined || usage.cost_usd !== undefined
      ? { cost_usd: add(total.cost_usd, usage.cost_usd) }
      : {}),
  };
}

async function attempt(
  agent: AgentContext,
  run: TaskRun,
  target: Target,
  prompt: Prompt,
  used: UsageSum,
): Promise<TaskEnd | Unavailable> {
  const { deps } = agent;
  if (target.name !== run.task.target) await setTaskTarget(deps.records, run.task.id, target.name);
  const timeoutMs = run.pipeline.orchestrator?.taskTimeoutMs ?? target.timeoutMs;
  const deadline = withDeadline(run.signal, timeoutMs);
  const outcome = await runRuntime({ ...agent, signal: deadline.signal }, target, prompt, run.transcript, {
    task: run.task.id,
    role: "task",
  }).finally(deadline.clear);
  addUsage(used, outcome.usage);
  deps.logger.debug("task attempt ended", {
    event: "task.attempt",
    task: run.task.id,
    outcome: outcome.kind,
  });
  switch (outcome.kind) {
    case "result":
      return { kind: "completed", result: outcome.result };
    case "failed":
      return { kind: "failed", diagnostic: outcome.diagnostic };
    case "unavailable":
      return { kind: "unavailable", ...(outcome.diagnostic ? { diagnostic: outcome.diagnostic } : {}) };
    default: {
      if (deadline.expired()) {
        const message = `the task did not finish within ${timeoutMs} ms on target ${target.name}`;
        return { kind: "failed", diagnostic: agentTimeout(message, target.name, timeoutMs) };
      }
      return run.cancelled() ? { kind: "stopped" } : { kind: "released" };
    }
  }
}

/** The pipeline's agent, the task's skill, the task's instructions and inputs, and the event. */
function taskPrompt(
  deps: RunDeps,
  pipeline: Pipeline,
  task: OrchestratedTask,
  event: ResolvedEvent,
  /** an outsider's pull request: its checkout holds the base's agent instructions, and the prompt says so */
  baseInstructions: BaseInstructions | undefined,
): Prompt {
  const { spec } = task;
  const inputs =
    spec.inputs === undefined
      ? ""
      : `\n\n## Inputs\n\n\`\`\`json\n${JSON.stringify(spec.inputs, null, 2)}\n\`\`\``;
  const prompt = assemblePrompt({
    config: deps.config,
    // a task is not the run: its instructions replace the pipeline's, and its result is not published
    pipeline: {
      ...pipeline,
      instructions: `${spec.instructions}${inputs}`,
      companions: [],
      result: undefined,
    },
    ...(pipeline.agent ? { agent: pipeline.agent } : {}),
    ...(spec.skill ? { skill: spec.skill } : {}),
    event: {
      name: event.eventName,
      source: event.kind,
      payload: event.payload,
      ...(event.command ? { command: event.command } : {}),
    },
    ...(baseInstructions ? { baseInstructions } : {}),
  });
  const ending =
    "# Result\n\nYou are one task of an orchestrated run. End with one JSON object holding your findings: it goes back to the orchestrator, which combines the tasks' results.";
  return { ...prompt, user: `${prompt.user}\n\n${ending}` };
}

/**
 * A task bound to a principal acts through that principal's code-host identity. An App principal's
 * token is the agent's GH_TOKEN / GITHUB_TOKEN (agent processes only; never logged): an
 * installation token for the run's repository alone, gone within the hour. A token principal's
 * token is long-lived and reaches whatever its account reaches, and an agent can be steered to
 * print it into its result (issue 55, finding 6): it never enters an agent's environment. Such a
 * task gets SVC_PRINCIPAL only; the principal still posts the run's outputs.
 */
async function identityEnv(
  deps: RunDeps,
  pipeline: Pipeline,
  task: OrchestratedTask,
  repo: string,
): Promise<Record<string, string>> {
  const binding = task.spec.principal;
  const id = binding ? codehostPrincipalId(pipeline.principals[binding]) : undefined;
  const credential = id === undefined ? undefined : deps.config.codehost?.principals[id];
  if (!binding || !credential) return {};
  if (!credential.app) return { SVC_PRINCIPAL: binding };
  // an App principal's installation token reaches only the run's repository: the agent is
  // steered by the pull request it reads
  const token = await identityToken(credential, repo, deps.pool, deps.config, { restrict: true });
  return { SVC_PRINCIPAL: binding, GH_TOKEN: token, GITHUB_TOKEN: token };
}
