import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { revokeTaskTokens } from "../../db/api_tokens.ts";
import { upsertArtifact } from "../../db/artifacts.ts";
import { transactionDb, wakeWorkers } from "../../db/boss.ts";
import {
  finishOrchestratedTask,
  heartbeatOrchestratedTask,
  type OrchestratedTask,
  promoteTasks,
  releaseOrchestratedTask,
  setTaskTarget,
} from "../../db/orchestrated-tasks.ts";
import { withTransaction } from "../../db/transaction.ts";
import { getWorkload } from "../../db/workloads.ts";
import { codehostPrincipalId } from "../../shared/config/outputs.ts";
import type { Pipeline, Target } from "../../shared/config/types.ts";
import { type Diagnostic, diagnostic } from "../../shared/diagnostics.ts";
import { laneQueue, type TaskJob } from "../../shared/queues.ts";
import { secretValue } from "../outputs/tokens.ts";
import { targetUsable } from "../queue/lanes.ts";
import { runRuntime } from "../run/agent.ts";
import { fileArtifact } from "../run/artifacts.ts";
import { withDeadline } from "../run/deadline.ts";
import { eventEnvironment } from "../run/environment.ts";
import { type HeldWatch, watchHeld } from "../run/held-watch.ts";
import type { ExecuteDeps } from "../run/lifecycle.ts";
import { type RunState, resolveRunEvent } from "../run/phases.ts";
import { assemblePrompt, type Prompt } from "../run/prompt.ts";
import { CheckoutError, prepareWorkspace, removeCheckout, type Workspace } from "../run/workspace.ts";

/**
 * One task of an orchestrated run (docs/worker.md), claimed from a lane by any worker: its own
 * workspace at the run's revision, the pipeline's agent with the task's skill and instructions, its
 * own run token (which cannot create tasks), the pipeline's targets in order, and a deadline
 * (`orchestrator.task_timeout`, else the target's timeout). Its result goes back to the orchestrator
 * only: a task publishes nothing. A failed task is recorded with its diagnostic; it does not fail
 * the run.
 */

export interface TaskHandle {
  invocationId: string;
  /** the task (or its whole run) was cancelled: kill it */
  cancel(): void;
}

type TaskEnd =
  | { kind: "completed"; result: unknown }
  | { kind: "failed"; diagnostic: Diagnostic }
  | { kind: "released" }
  | { kind: "stopped" };

export async function runClaimedTask(
  deps: ExecuteDeps,
  tasks: Map<string, TaskHandle>,
  task: OrchestratedTask,
  shutdown: AbortSignal,
): Promise<void> {
  const watch = watchTask(deps, tasks, task, shutdown);
  const transcript = { file: "" };
  let end: TaskEnd;
  let cleanup: Workspace | undefined;
  let pipeline: Pipeline | undefined;
  try {
    const workload = await workloadOf(deps, task.invocationId);
    pipeline = workload ? deps.config.pipelines[workload.pipeline] : undefined;
    if (!workload || !pipeline?.orchestrator) {
      const message = `pipeline ${workload?.pipeline ?? "(unknown)"} is no longer configured as orchestrated on this worker`;
      end = { kind: "failed", diagnostic: diagnostic("no_matching_pipeline", message) };
    } else {
      const paths = taskWorkspace(deps.config.dir, workload.id, task.id);
      cleanup = pipeline.retainCheckout ? undefined : paths;
      transcript.file = join(paths.logsDir, "transcript.log");
      end = await executeTask(deps, { task, workload, pipeline, paths, watch, transcript: transcript.file });
    }
  } catch (error) {
    const message = `the task failed inside the worker: ${(error as Error).message}`;
    end = { kind: "failed", diagnostic: diagnostic("agent_failed", message) };
  } finally {
    watch.stop();
  }
  if (cleanup) await removeCheckout(cleanup).catch(() => {}); // the retention sweep removes what is left
  if (watch.claimLost()) return;
  if (transcript.file) {
    const artifact = await fileArtifact({
      invocationId: task.invocationId,
      taskId: task.id,
      name: `${task.id}/transcript`,
      path: transcript.file,
      mediaType: "text/plain",
    });
    if (artifact) await upsertArtifact(deps.records ?? deps.pool, artifact);
  }
  await recordTaskEnd(deps, task, pipeline, watch.cancelled() ? { kind: "stopped" } : end);
}

type TaskWatch = HeldWatch;

/** The task's watch (held-watch.ts): its heartbeat, the cancel channels, shutdown, a lost claim. */
function watchTask(
  deps: ExecuteDeps,
  tasks: Map<string, TaskHandle>,
  task: OrchestratedTask,
  shutdown: AbortSignal,
): TaskWatch {
  return watchHeld({
    shutdown,
    heartbeatMs: deps.heartbeatMs,
    heartbeat: () => heartbeatOrchestratedTask(deps.records ?? deps.pool, task.id, deps.workerId),
    isCancelled: async () => {
      const { rows } = await deps.pool.query("SELECT status FROM svc.tasks WHERE id = $1", [task.id]);
      return rows[0]?.status === "cancelled";
    },
    register: (cancel) => tasks.set(task.id, { invocationId: task.invocationId, cancel }),
    unregister: () => tasks.delete(task.id),
    onCancel: () =>
      deps.logger.info("task cancelled: stopping it", { event: "task.cancelling", task: task.id }),
    onClaimLost: () => deps.logger.warn("task claim lost", { event: "task.claim_lost", task: task.id }),
  });
}

async function workloadOf(deps: ExecuteDeps, invocationId: string) {
  const { rows } = await deps.pool.query<{ workload_id: string }>(
    "SELECT workload_id FROM svc.invocations WHERE id = $1",
    [invocationId],
  );
  return rows[0] ? getWorkload(deps.pool, rows[0].workload_id) : undefined;
}

/** A task's own directories beside its run's: `workspaces/<workload>/<task>/{checkout,run,surface,logs}`. */
export function taskWorkspace(configDir: string, workloadId: string, taskId: string): Workspace {
  const root = join(configDir, "workspaces", workloadId, taskId);
  return {
    root,
    checkout: join(root, "checkout"),
    runDir: join(root, "run"),
    surfaceDir: join(root, "surface"),
    logsDir: join(root, "logs"),
  };
}

interface TaskRun {
  task: OrchestratedTask;
  workload: { id: string; trigger_id: string | null; pipeline: string };
  pipeline: Pipeline;
  paths: Workspace;
  watch: TaskWatch;
  transcript: string;
}

async function executeTask(deps: ExecuteDeps, run: TaskRun): Promise<TaskEnd> {
  const { task, workload, pipeline, paths, watch } = run;
  const input = {
    ...{ invocationId: task.invocationId, workload, pipeline, paths },
    signal: watch.signal,
    target: task.target,
    isCancelled: watch.cancelled,
  };
  const event = await resolveRunEvent(deps, input);
  const { repo, sha, branch } = event.context;
  try {
    await prepareWorkspace(paths, {
      cloneUrl: repo ? deps.config.repos[repo]?.cloneUrl : undefined,
      sha,
      branch,
    });
  } catch (error) {
    if (!(error instanceof CheckoutError)) throw error;
    const message = `cloning ${repo} at ${sha || branch || "its default branch"} for the task failed: ${error.message}`;
    return { kind: "failed", diagnostic: diagnostic("setup_failed", message, { field: "checkout" }) };
  }
  const env = { ...eventEnvironment(paths, event, pipeline), ...(await identityEnv(deps, pipeline, task)) };
  const state: RunState = {
    ...{ deps, input: { ...input, event }, event, env },
    records: deps.records ?? deps.pool,
    knowledge: { passages: [] },
    seq: 0,
  };
  const prompt = taskPrompt(deps, pipeline, task, event);
  await writeFile(run.transcript, "");
  const unavailable: Diagnostic[] = [];
  for (const name of pipeline.targets) {
    const target = deps.config.targets[name];
    if (!target || !targetUsable(target, deps.cooldowns, deps.secrets)) continue;
    const end = await attempt(state, run, target, prompt);
    if (end.kind !== "unavailable") return end;
    if (end.diagnostic) unavailable.push(end.diagnostic);
  }
  const message = `no target of pipeline ${pipeline.name} could run the task`;
  return { kind: "failed", diagnostic: diagnostic("target_unavailable", message, { details: unavailable }) };
}

async function attempt(
  state: RunState,
  run: TaskRun,
  target: Target,
  prompt: Prompt,
): Promise<TaskEnd | { kind: "unavailable"; diagnostic?: Diagnostic }> {
  const { deps } = state;
  if (target.name !== run.task.target) await setTaskTarget(state.records, run.task.id, target.name);
  const timeoutMs = run.pipeline.orchestrator?.taskTimeoutMs ?? target.timeoutMs;
  const deadline = withDeadline(run.watch.signal, timeoutMs);
  const outcome = await runRuntime(
    { ...state, input: { ...state.input, signal: deadline.signal } },
    target,
    prompt,
    run.transcript,
    { task: run.task.id, role: "task" },
  ).finally(deadline.clear);
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
    default:
      if (deadline.expired())
        return {
          kind: "failed",
          diagnostic: diagnostic(
            "agent_timeout",
            `the task did not finish within ${timeoutMs} ms on target ${target.name}`,
            { target: target.name, metadata: { timeoutMs } },
          ),
        };
      return run.watch.cancelled() ? { kind: "stopped" } : { kind: "released" };
  }
}

/** The pipeline's agent, the task's skill, the task's instructions and inputs, and the event. */
function taskPrompt(
  deps: ExecuteDeps,
  pipeline: Pipeline,
  task: OrchestratedTask,
  event: RunState["event"],
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
    event: { name: event.eventName, source: event.kind, payload: event.payload },
  });
  const ending =
    "# Result\n\nYou are one task of an orchestrated run. End with one JSON object holding your findings: it goes back to the orchestrator, which combines the tasks' results.";
  return { ...prompt, user: `${prompt.user}\n\n${ending}` };
}

/**
 * A task bound to a principal acts through that principal's code-host identity: its token is the
 * agent's GH_TOKEN / GITHUB_TOKEN (agent processes only; never logged).
 */
async function identityEnv(
  deps: ExecuteDeps,
  pipeline: Pipeline,
  task: OrchestratedTask,
): Promise<Record<string, string>> {
  const binding = task.spec.principal;
  const id = binding ? codehostPrincipalId(pipeline.principals[binding]) : undefined;
  const source = id === undefined ? undefined : deps.config.codehost?.principals[id]?.token;
  if (!binding || !source) return {};
  const token = await secretValue(source, deps.pool, deps.config);
  return { SVC_PRINCIPAL: binding, GH_TOKEN: token, GITHUB_TOKEN: token };
}

/**
 * Records the end: a finished task with its result or diagnostic; a task the shutdown took back
 * queued again with a fresh job; a cancelled one as it is. Then the run's next pending task may start.
 */
async function recordTaskEnd(
  deps: ExecuteDeps,
  task: OrchestratedTask,
  pipeline: Pipeline | undefined,
  end: TaskEnd,
): Promise<void> {
  await revokeTaskTokens(deps.records ?? deps.pool, task.id).catch(() => {}); // it expires on its own
  const maxParallel = pipeline?.orchestrator?.maxParallel ?? 1;
  const lanes = await withTransaction(deps.pool, async (client) => {
    if (end.kind === "released") {
      if (!(await releaseOrchestratedTask(client, task.id, deps.workerId))) return [];
      const queue = laneQueue(task.target);
      const job: TaskJob = { invocationId: task.invocationId, taskId: task.id };
      await deps.boss.send(queue, job, { db: transactionDb(client) });
      return [queue];
    }
    if (end.kind === "completed" || end.kind === "failed") {
      await finishOrchestratedTask(client, task.id, deps.workerId, {
        status: end.kind,
        ...(end.kind === "completed" ? { result: end.result } : { diagnostic: end.diagnostic }),
      });
    }
    return promoteTasks(client, deps.boss, task.invocationId, maxParallel);
  });
  for (const queue of lanes) wakeWorkers(deps.boss, queue);
  deps.logger.info(`task ${end.kind}`, {
    event: `task.${end.kind}`,
    task: task.id,
    invocation: task.invocationId,
    ...(end.kind === "failed" ? { code: end.diagnostic.code } : {}),
  });
}
