import { randomUUID } from "node:crypto";
import type pg from "pg";
import type { PgBoss } from "pg-boss";
import { DISPATCH_QUEUE, type DispatchJob } from "../shared/queues.ts";
import { transactionDb, wakeWorkers } from "./boss.ts";
import { withTransaction } from "./transaction.ts";
import { announceTrigger } from "./trigger-announcements.ts";
import { insertTrigger, type NewTrigger } from "./triggers.ts";

/** recordTrigger calls of this process in flight */
let recording = 0;

/**
 * Records a trigger and its dispatch job in one transaction: after a crash at any instant there is
 * either both or neither. A redelivery (same source and delivery id) finds the first trigger and
 * sends nothing, so one delivery never dispatches twice.
 *
 * The trigger is announced to the workers (see trigger-announcements.ts). When this process
 * records nothing else, the announcement is queued by the trigger's own INSERT and goes out with
 * the commit, so a worker starts on it without waiting for one more statement. Otherwise it is
 * sent after the commit: a transaction that NOTIFYs holds Postgres's notify lock through its WAL
 * flush, so concurrent ones would commit one at a time (see `wakeWorkers`).
 */
export async function recordTrigger(
  pool: pg.Pool,
  boss: PgBoss,
  trigger: NewTrigger,
): Promise<{ id: string; created: boolean }> {
  const announcedJob = recording === 0 ? randomUUID() : undefined;
  recording += 1;
  let result: { id: string; created: boolean; jobId: string | null };
  try {
    result = await withTransaction(pool, async (client) => {
      const inserted = await insertTrigger(client, trigger, announcedJob);
      if (!inserted.created) return { ...inserted, jobId: null };
      const job: DispatchJob = { triggerId: inserted.id };
      const jobId = await boss.send(DISPATCH_QUEUE, job, {
        db: transactionDb(client, { prepare: true }),
        ...(announcedJob ? { id: announcedJob } : {}),
      });
      return { ...inserted, jobId };
    });
  } finally {
    recording -= 1;
  }
  if (result.created && !announcedJob) {
    if (result.jobId)
      announceTrigger(boss, {
        triggerId: result.id,
        jobId: result.jobId,
        kind: trigger.kind,
        source: trigger.source,
        eventName: trigger.eventName,
      });
    else wakeWorkers(boss, DISPATCH_QUEUE);
  }
  return { id: result.id, created: result.created };
}
