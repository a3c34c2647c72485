import type pg from "pg";
import type { PgBoss } from "pg-boss";
import { DISPATCH_QUEUE, type DispatchJob, type InvocationJob, laneQueue } from "../shared/queues.ts";
import { ensureLaneQueue, transactionDb, wakeWorkers } from "./boss.ts";
import { findOrphanedInvocations, findOrphanedTriggers } from "./queue-jobs.ts";
import { withTransaction } from "./transaction.ts";

export interface Reconciled {
  /** queued triggers that had no live dispatch job, sent one */
  triggers: string[];
  /** invocations (queued, or running without a heartbeat) that had no live lane job, sent one */
  invocations: string[];
}

/**
 * The one reconcile rule, used by the worker's sweeper (with a small limit, every few seconds) and
 * by `POST /admin/reconcile`: every queued trigger older than `olderThanSeconds` gets a live
 * dispatch job, every queued or stale running invocation a live job on its lane (the lane of the
 * target it names, the local lane without one). Sending is idempotent for the worker: a dispatch
 * finds its trigger dispatched, and only one claim can take an invocation.
 */
export async function reconcileQueue(
  pool: pg.Pool,
  boss: PgBoss,
  targets: Readonly<Record<string, { timeoutMs: number }>>,
  olderThanSeconds: number,
  limit = 500,
): Promise<Reconciled> {
  const triggers = await findOrphanedTriggers(pool, olderThanSeconds, limit);
  const invocations = await findOrphanedInvocations(pool, olderThanSeconds, limit);
  if (triggers.length === 0 && invocations.length === 0) return { triggers, invocations: [] };
  // a shadow run back on its target's shadow lane (shared/queues.ts laneQueue)
  const lanes = new Set(invocations.map((row) => laneQueue(row.target, row.shadow)));
  for (const lane of lanes) await ensureLaneQueue(boss, lane, targets);
  await withTransaction(pool, async (client) => {
    const db = transactionDb(client);
    for (const triggerId of triggers) {
      const job: DispatchJob = { triggerId };
      await boss.send(DISPATCH_QUEUE, job, { db });
    }
    for (const row of invocations) {
      const job: InvocationJob = {
        invocationId: row.id,
        ...(row.concurrency_group ? { group: row.concurrency_group } : {}),
      };
      await boss.send(laneQueue(row.target, row.shadow), job, { db });
    }
  });
  if (triggers.length > 0) wakeWorkers(boss, DISPATCH_QUEUE);
  for (const lane of lanes) wakeWorkers(boss, lane);
  return { triggers, invocations: invocations.map((row) => row.id) };
}
