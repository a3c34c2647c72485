import type pg from "pg";
import type { PoolClient } from "pg";
import type { PgBoss } from "pg-boss";
import { revokeRunTokensExceptTasks, revokeTaskTokens } from "../../db/api_tokens.ts";
import { transactionDb, wakeWorkers } from "../../db/boss.ts";
import { tryLockGroup } from "../../db/concurrency-groups.ts";
import {
  failLostInvocation,
  getInvocationPipeline,
  lockLostInvocations,
  lockStaleInvocations,
  requeueInvocation,
  type StaleInvocation,
} from "../../db/invocations.ts";
import {
  cancelOrchestratedTasks,
  lockStaleTasks,
  promoteTasks,
  reapTask,
} from "../../db/orchestrated-tasks.ts";
import { reconcileQueue } from "../../db/reconcile-queue.ts";
import { failOpenTasks } from "../../db/tasks.ts";
import { withTransaction } from "../../db/transaction.ts";
import { settleTrigger } from "../../db/trigger-status.ts";
import { getWorkload } from "../../db/workloads.ts";
import { runPipeline } from "../../shared/config/pipeline/shadow.ts";
import type { ConfigSnapshot } from "../../shared/config/types.ts";
import { diagnostic } from "../../shared/diagnostics.ts";
import type { Logger } from "../../shared/logger.ts";
import { type InvocationJob, type LaneJob, laneQueue, type TaskJob } from "../../shared/queues.ts";
import type { CredentialCooldowns } from "../credentials/cooldowns.ts";
import type { CredentialSecrets } from "../credentials/secrets.ts";
import { handOffGroup } from "./group-handoff.ts";
import { laneFor } from "./lanes.ts";
import { type LeaseData, LOST_QUEUE } from "./run-leases.ts";

export interface ReaperDeps {
  pool: pg.Pool;
  boss: PgBoss;
  config: Readonly<ConfigSnapshot>;
  cooldowns: CredentialCooldowns;
  secrets: CredentialSecrets;
  logger: Logger;
  staleAfterMs: number;
  /** attempts after which a lost run fails with `worker_lost` instead of being retried */
  maxAttempts: number;
}

/**
 * Finds runs whose worker was lost (killed, frozen, partitioned): pg-boss failed their lease into
 * the lost-lease queue, or, for a run without a lease, its heartbeat went stale. Each is queued
 * again with a fresh lane job or, once it used up its attempts, failed with `worker_lost`.
 * Any worker may reap; SKIP LOCKED splits the rows, so no run is reaped twice. Then applies the
 * reconcile rule shared with `POST /admin/reconcile` (db/reconcile-queue.ts) to triggers and runs
 * whose job is gone.
 */
export async function reapStaleInvocations(deps: ReaperDeps): Promise<number> {
  const settled: string[] = [];
  const lanes = new Set<string>();
  const reclaim = (client: PoolClient, rows: StaleInvocation[], why: string) =>
    reclaimRuns(deps, client, rows, why, { settled, lanes });
  // the runs whose pg-boss lease failed: missed heartbeats, or past its expiry (worker/queue/run-leases.ts)
  let count = await withTransaction(deps.pool, async (client) => {
    const db = transactionDb(client);
    const jobs = await deps.boss.fetch<LeaseData | LaneJob>(LOST_QUEUE, { batchSize: 50, db });
    if (jobs.length === 0) return 0;
    const rows = await lockLostInvocations(
      client,
      jobs.flatMap((job) => lostClaim(job.data)),
    );
    await reclaim(client, rows, "stopped renewing its lease");
    await deps.boss.complete(
      LOST_QUEUE,
      jobs.map((job) => job.id),
      null,
      { db },
    );
    return rows.length;
  });
  // the backstop for runs held without a lease (claimed by an earlier version): a stale heartbeat
  count += await withTransaction(deps.pool, async (client) => {
    const stale = await lockStaleInvocations(client, deps.staleAfterMs);
    await reclaim(client, stale, "stopped heartbeating");
    return stale.length + (await reapStaleTasks(deps, client, lanes));
  });
  // outside any transaction and without row locks: a claim never waits on this scan
  const resent = await reconcileQueue(
    deps.pool,
    deps.boss,
    deps.config.targets,
    Math.ceil((deps.staleAfterMs * 4) / 1000),
    20,
  );
  for (const trigger of resent.triggers)
    deps.logger.warn("queued trigger without a job sent again", { event: "trigger.resent", trigger });
  for (const invocation of resent.invocations)
    deps.logger.warn("queued run without a job sent again", { event: "invocation.resent", invocation });
  for (const lane of lanes) wakeWorkers(deps.boss, lane);
  for (const triggerId of new Set(settled)) await settleTrigger(deps.pool, triggerId);
  return count;
}

/**
 * The claim a failed lease stood for: a lease of LEASE_QUEUE says so itself; a lane job held as the
 * lease names the attempt its claim made. Any other lane job is never held past its claim, so a
 * failed one stands for no run (none is expected: it is completed in the claim's transaction).
 */
function lostClaim(data: LeaseData | LaneJob): LeaseData[] {
  if ("attempts" in data) return [data];
  if ("taskId" in data || data.attempt === undefined) return [];
  return [{ invocationId: data.invocationId, attempts: data.attempt }];
}

/**
 * Lost runs come back: each is queued again with a fresh lane job while it has attempts left, or
 * fails with `worker_lost`. Its open tasks close with `worker_lost` and its agent token is revoked.
 */
async function reclaimRuns(
  deps: ReaperDeps,
  client: PoolClient,
  rows: StaleInvocation[],
  why: string,
  out: { settled: string[]; lanes: Set<string> },
): Promise<void> {
  for (const row of rows) {
    const group = row.concurrency_group;
    // this transaction holds the run's row: waiting for its group's lock could deadlock with a
    // holder that waits for the row. A busy group's run is reaped by the next sweep (still stale)
    if (group && !(await tryLockGroup(client, group))) continue;
    const workload = await getWorkload(client, row.workload_id);
    const lost = diagnostic("worker_lost", `the worker running invocation ${row.id} ${why}`, {
      metadata: { attempts: row.attempts },
    });
    await failOpenTasks(client, row.id, lost);
    // the lost run's agent token dies with the run (it also expires on its own); its
    // orchestrated tasks run on and keep theirs: a retried orchestrator finds them (list_tasks)
    await revokeRunTokensExceptTasks(client, row.id);
    const pipeline = workload ? runPipeline(deps.config, workload.pipeline, row.shadow) : undefined;
    if (row.attempts < deps.maxAttempts && pipeline) {
      await requeueInvocation(client, row.id);
      if (group) {
        // back through its group: a newer event of the group that waits runs instead of this one
        const { lane, started } = await handOffGroup(deps, client, group, pipeline);
        if (lane) out.lanes.add(lane);
        if (started !== row.id) {
          deps.logger.warn("lost run superseded by a newer event of its group", {
            event: "invocation.superseded",
            invocation: row.id,
            group,
          });
          continue;
        }
      } else {
        const lane = laneFor(pipeline, deps.config, deps.cooldowns, deps.secrets, row.shadow);
        const job: InvocationJob = { invocationId: row.id };
        await deps.boss.send(lane.queue, job, { db: transactionDb(client) });
        out.lanes.add(lane.queue);
      }
      deps.logger.warn("lost run queued again", {
        event: "invocation.requeued",
        invocation: row.id,
        attempts: row.attempts,
      });
    } else {
      await failLostInvocation(client, row.id, lost);
      await cancelOrchestratedTasks(client, row.id, lost);
      if (group) {
        const { lane } = await handOffGroup(deps, client, group, pipeline);
        if (lane) out.lanes.add(lane);
      }
      deps.logger.warn("lost run failed", {
        event: "invocation.worker_lost",
        invocation: row.id,
        attempts: row.attempts,
      });
      if (workload?.trigger_id) out.settled.push(workload.trigger_id);
    }
  }
}

/**
 * Orchestrated tasks whose worker stopped heartbeating: queued again with a fresh lane job, or
 * failed with `worker_lost` once out of attempts (then the run's next pending task may start). The
 * orchestrator reads either outcome through its task tools; nothing stays `running`.
 */
async function reapStaleTasks(
  deps: ReaperDeps,
  client: Parameters<typeof promoteTasks>[0],
  lanes: Set<string>,
): Promise<number> {
  const stale = await lockStaleTasks(client, deps.staleAfterMs);
  for (const task of stale) {
    await revokeTaskTokens(client, task.id);
    if (task.attempts < deps.maxAttempts) {
      await reapTask(client, task.id, null);
      const job: TaskJob = { invocationId: task.invocationId, taskId: task.id };
      const queue = laneQueue(task.target, task.shadow === true);
      await deps.boss.send(queue, job, { db: transactionDb(client) });
      lanes.add(queue);
      deps.logger.warn("lost task queued again", {
        event: "task.requeued",
        task: task.id,
        attempts: task.attempts,
      });
      continue;
    }
    const lost = diagnostic("worker_lost", `the worker running task ${task.id} stopped heartbeating`, {
      metadata: { attempts: task.attempts },
    });
    await reapTask(client, task.id, lost);
    deps.logger.warn("lost task failed", {
      event: "task.worker_lost",
      task: task.id,
      attempts: task.attempts,
    });
    const maxParallel = (await orchestratorOf(deps, client, task.invocationId))?.maxParallel ?? 1;
    for (const queue of await promoteTasks(client, deps.boss, task.invocationId, maxParallel))
      lanes.add(queue);
  }
  return stale.length;
}

async function orchestratorOf(
  deps: ReaperDeps,
  client: Parameters<typeof promoteTasks>[0],
  invocationId: string,
) {
  const pipeline = await getInvocationPipeline(client, invocationId);
  return pipeline === undefined ? undefined : deps.config.pipelines[pipeline]?.orchestrator;
}
