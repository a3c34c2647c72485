import type pg from "pg";
import { listInvocationsForTrigger } from "../db/invocations.ts";
import { withTransaction } from "../db/transaction.ts";
import { lockTrigger } from "../db/trigger-status.ts";
import { setTriggerStatus } from "../db/triggers.ts";
import { setWorkloadStatus } from "../db/workloads.ts";
import type { Diagnostic } from "../shared/diagnostics.ts";

/**
 * A trigger's status follows its invocations: `running` while any is queued or running, then
 * `error` when any failed (carrying the first failure's `{ code, message }`), else `completed`.
 * Workloads follow their own invocations the same way. Runs under the trigger's row lock, so the
 * last two invocations finishing at once still settle it exactly once.
 */
export async function settleTrigger(pool: pg.Pool, triggerId: string): Promise<void> {
  await withTransaction(pool, (client) => settleTriggerIn(client, triggerId));
}

/** settleTrigger inside a transaction the caller owns (the one that finished the invocation). */
export async function settleTriggerIn(client: pg.ClientBase, triggerId: string): Promise<void> {
  {
    const trigger = await lockTrigger(client, triggerId);
    if (!trigger || trigger.status === "discarded") return;
    const invocations = await listInvocationsForTrigger(client, triggerId);
    const byWorkload = new Map<string, typeof invocations>();
    for (const invocation of invocations) {
      const list = byWorkload.get(invocation.workload_id) ?? [];
      list.push(invocation);
      byWorkload.set(invocation.workload_id, list);
    }
    const open = (list: typeof invocations) =>
      list.some((i) => i.status === "queued" || i.status === "running");
    for (const [workloadId, list] of byWorkload) {
      const status = open(list) ? "running" : list.some((i) => i.status === "failed") ? "error" : "completed";
      await setWorkloadStatus(client, workloadId, status);
    }
    if (invocations.length === 0) return;
    if (open(invocations)) {
      if (trigger.status !== "running") await setTriggerStatus(client, triggerId, "running");
      return;
    }
    const failed = invocations.find((i) => i.status === "failed");
    const summary: Diagnostic | null = failed?.diagnostic
      ? { code: failed.diagnostic.code, message: failed.diagnostic.message }
      : null;
    await setTriggerStatus(client, triggerId, failed ? "error" : "completed", summary);
  }
}
