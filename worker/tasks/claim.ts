import { join } from "node:path";
import type { PgBoss } from "pg-boss";
import { revokeTaskTokens } from "../../db/api_tokens.ts";
import { upsertArtifact } from "../../db/artifacts.ts";
import { transactionDb, wakeWorkers } from "../../db/boss.ts";
import {
  finishOrchestratedTask,
  heartbeatOrchestratedTask,
  type OrchestratedTask,
  orchestratedTaskStatus,
  promoteTasks,
  releaseOrchestratedTask,
} from "../../db/orchestrated-tasks.ts";
import { withTransaction } from "../../db/transaction.ts";
import { workloadOfInvocation } from "../../db/workloads.ts";
import { runPipeline } from "../../shared/config/pipeline/shadow.ts";
import type { Pipeline } from "../../shared/config/types.ts";
import { diagnostic } from "../../shared/diagnostics.ts";
import { laneQueue, type TaskJob } from "../../shared/queues.ts";
import { taskWorkspace, type Workspace } from "../../shared/workspace-layout.ts";
import { transcriptArtifact } from "../run/artifacts.ts";
import { type HeldWatch, watchHeld } from "../run/held-watch.ts";
import { openRunSecrets, type RunSecrets } from "../run/run-secrets.ts";
import type { RunDeps } from "../run/types.ts";
import { removeCheckout } from "../run/workspace.ts";
import { runTaskAgent, type TaskEnd } from "./agent.ts";

/**
 * One task of an orchestrated run (docs/worker.md), claimed from a lane by any worker, run by its
 * agent (agent.ts). Its result goes back to the orchestrator only: a task publishes nothing. A
 * failed task is recorded with its diagnostic; it does not fail the run.
 */

export interface TaskHandle {
  invocationId: string;
  /** the task (or its whole run) was cancelled: kill it */
  cancel(): void;
}

/** What holding a task needs beyond running its agent: its queue and its heartbeat. */
export interface TaskDeps extends RunDeps {
  boss: PgBoss;
  heartbeatMs: number;
}

export async function runClaimedTask(
  deps: TaskDeps,
  tasks: Map<string, TaskHandle>,
  task: OrchestratedTask,
  shutdown: AbortSignal,
): Promise<void> {
  const watch = watchTask(deps, tasks, task, shutdown);
  // the task's transcript is recorded after its agent ends: its values stay until then
  const secrets = openRunSecrets(task.invocationId, deps);
  try {
    await runAndRecordTask(deps, task, watch, secrets);
  } finally {
    secrets.close();
  }
}

async function runAndRecordTask(
  deps: TaskDeps,
  task: OrchestratedTask,
  watch: TaskWatch,
  secrets: RunSecrets,
): Promise<void> {
  const transcript = { file: "" };
  let end: TaskEnd;
  let cleanup: Workspace | undefined;
  let pipeline: Pipeline | undefined;
  let shadow = false;
  try {
    const workload = await workloadOfInvocation(deps.pool, task.invocationId);
    shadow = workload?.shadow === true;
    pipeline = workload ? runPipeline(deps.config, workload.pipeline, workload.shadow === true) : undefined;
    if (!workload || !pipeline?.orchestrator) {
      const message = `pipeline ${workload?.pipeline ?? "(unknown)"} is no longer configured as orchestrated on this worker`;
      end = { kind: "failed", diagnostic: diagnostic("no_matching_pipeline", message) };
    } else {
      const paths = taskWorkspace(deps.config.dir, workload.id, task.id);
      cleanup = pipeline.retainCheckout ? undefined : paths;
      transcript.file = join(paths.logsDir, "transcript.log");
      end = await runTaskAgent(deps, {
        ...{ task, workload, pipeline, paths, transcript: transcript.file, secrets },
        signal: watch.signal,
        cancelled: watch.cancelled,
      });
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
    const artifact = await transcriptArtifact(
      {
        invocationId: task.invocationId,
        taskId: task.id,
        name: `${task.id}/transcript`,
        path: transcript.file,
        mediaType: "text/plain",
      },
      deps.logger,
    );
    if (artifact) await upsertArtifact(deps.records, artifact);
  }
  await recordTaskEnd(deps, task, { pipeline, shadow }, watch.cancelled() ? { kind: "stopped" } : end);
}

type TaskWatch = HeldWatch;

/** The task's watch (held-watch.ts): its heartbeat, the cancel channels, shutdown, a lost claim. */
function watchTask(
  deps: TaskDeps,
  tasks: Map<string, TaskHandle>,
  task: OrchestratedTask,
  shutdown: AbortSignal,
): TaskWatch {
  return watchHeld({
    shutdown,
    heartbeatMs: deps.heartbeatMs,
    heartbeat: () => heartbeatOrchestratedTask(deps.records, task.id, deps.workerId),
    isCancelled: async () => (await orchestratedTaskStatus(deps.pool, task.id)) === "cancelled",
    register: (cancel) => tasks.set(task.id, { invocationId: task.invocationId, cancel }),
    unregister: () => tasks.delete(task.id),
    onCancel: () =>
      deps.logger.info("task cancelled: stopping it", { event: "task.cancelling", task: task.id }),
    onClaimLost: () => deps.logger.warn("task claim lost", { event: "task.claim_lost", task: task.id }),
  });
}

/**
 * Records the end: a finished task with its result or diagnostic; a task the shutdown took back
 * queued again with a fresh job (a shadow run's on its target's shadow lane, as promoteTasks sends
 * it); a cancelled one as it is. Then the run's next pending task may start.
 */
async function recordTaskEnd(
  deps: TaskDeps,
  task: OrchestratedTask,
  run: { pipeline: Pipeline | undefined; shadow: boolean },
  end: TaskEnd,
): Promise<void> {
  const { pipeline } = run;
  await revokeTaskTokens(deps.records, task.id).catch(() => {}); // it expires on its own
  const maxParallel = pipeline?.orchestrator?.maxParallel ?? 1;
  const lanes = await withTransaction(deps.pool, async (client) => {
    if (end.kind === "released") {
      if (!(await releaseOrchestratedTask(client, task.id, deps.workerId))) return [];
      const queue = laneQueue(task.target, run.shadow);
      const job: TaskJob = { invocationId: task.invocationId, taskId: task.id };
      await deps.boss.send(queue, job, { db: transactionDb(client) });
      return [queue];
    }
    if (end.kind === "completed" || end.kind === "failed") {
      await finishOrchestratedTask(client, task.id, deps.workerId, {
        status: end.kind,
        ...(end.kind === "completed" ? { result: end.result } : { diagnostic: end.diagnostic }),
        ...(end.usage ? { usage: end.usage } : {}),
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
