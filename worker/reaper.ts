import type pg from "pg";
import type { PgBoss } from "pg-boss";
import { revokeInvocationTokens } from "../db/api_tokens.ts";
import { transactionDb, wakeWorkers } from "../db/boss.ts";
import { failLostInvocation, lockStaleInvocations, requeueInvocation } from "../db/invocations.ts";
import { reconcileQueue } from "../db/reconcile-queue.ts";
import { failOpenTasks } from "../db/tasks.ts";
import { withTransaction } from "../db/transaction.ts";
import { settleTrigger } from "../db/trigger-status.ts";
import { getWorkload } from "../db/workloads.ts";
import type { ConfigSnapshot } from "../shared/config/types.ts";
import { diagnostic } from "../shared/diagnostics.ts";
import type { Logger } from "../shared/logger.ts";
import type { InvocationJob } from "../shared/queues.ts";
import type { CredentialCooldowns } from "./credentials/cooldowns.ts";
import type { CredentialSecrets } from "./credentials/secrets.ts";
import { laneFor } from "./lanes.ts";

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
 * Finds runs whose worker stopped heartbeating (killed, frozen, partitioned) and either queues them
 * again with a fresh lane job or, once they used up their attempts, fails them with `worker_lost`.
 * Any worker may reap; SKIP LOCKED splits the rows, so no run is reaped twice. Then applies the
 * reconcile rule shared with `POST /admin/reconcile` (db/reconcile-queue.ts) to triggers and runs
 * whose job is gone.
 */
export async function reapStaleInvocations(deps: ReaperDeps): Promise<number> {
  const settled: string[] = [];
  const lanes = new Set<string>();
  const count = await withTransaction(deps.pool, async (client) => {
    const stale = await lockStaleInvocations(client, deps.staleAfterMs);
    for (const row of stale) {
      const workload = await getWorkload(client, row.workload_id);
      const lost = diagnostic("worker_lost", `the worker running invocation ${row.id} stopped heartbeating`, {
        metadata: { attempts: row.attempts },
      });
      await failOpenTasks(client, row.id, lost);
      // the lost run's agent token dies with the run (it also expires on its own)
      await revokeInvocationTokens(client, row.id);
      const pipeline = workload ? deps.config.pipelines[workload.pipeline] : undefined;
      if (row.attempts < deps.maxAttempts && pipeline) {
        await requeueInvocation(client, row.id);
        const lane = laneFor(pipeline, deps.config, deps.cooldowns, deps.secrets);
        const job: InvocationJob = { invocationId: row.id };
        await deps.boss.send(lane.queue, job, { db: transactionDb(client) });
        lanes.add(lane.queue);
        deps.logger.warn("lost run queued again", {
          event: "invocation.requeued",
          invocation: row.id,
          attempts: row.attempts,
        });
      } else {
        await failLostInvocation(client, row.id, lost);
        deps.logger.warn("lost run failed", {
          event: "invocation.worker_lost",
          invocation: row.id,
          attempts: row.attempts,
        });
        if (workload?.trigger_id) settled.push(workload.trigger_id);
      }
    }
    return stale.length;
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
