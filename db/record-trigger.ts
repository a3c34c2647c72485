import type pg from "pg";
import type { PgBoss } from "pg-boss";
import { DISPATCH_QUEUE, type DispatchJob } from "../shared/queues.ts";
import { transactionDb, wakeWorkers } from "./boss.ts";
import { withTransaction } from "./transaction.ts";
import { insertTriggers, type NewTrigger } from "./triggers.ts";

/**
 * Records a trigger and its dispatch job in one transaction: after a crash at any instant there is
 * either both or neither. A redelivery (same source and delivery id) finds the first trigger and
 * sends nothing, so one delivery never dispatches twice. Every path that creates a trigger (webhooks,
 * code host, tracker, fire, replay, URL dispatch, schedules) comes through here; the worker's
 * dispatch then turns it into a run (worker/queue/dispatch.ts).
 *
 * The workers are woken after the commit (wakeWorkers), never inside the transaction: a transaction
 * that NOTIFYs holds Postgres's notify lock through its WAL flush, so concurrent ones would commit
 * one at a time.
 */
export async function recordTrigger(
  pool: pg.Pool,
  boss: PgBoss,
  trigger: NewTrigger,
): Promise<{ id: string; created: boolean }> {
  return (await recordTriggers(pool, boss, [trigger]))[0]!;
}

/**
 * recordTrigger for many triggers in one transaction (one commit, one insert of triggers, one of
 * jobs), answered in their order. Either every one of them is stored or none is. `alongside` writes
 * what belongs with them (an eval run's rows) in the same transaction, before their jobs exist.
 */
export async function recordTriggers(
  pool: pg.Pool,
  boss: PgBoss,
  triggers: readonly NewTrigger[],
  alongside?: (client: pg.ClientBase, recorded: { id: string; created: boolean }[]) => Promise<void>,
): Promise<{ id: string; created: boolean }[]> {
  const recorded = await withTransaction(pool, async (client) => {
    const inserted = await insertTriggers(client, triggers);
    await alongside?.(client, inserted);
    const jobs = inserted
      .filter((trigger) => trigger.created)
      .map((trigger): { data: DispatchJob } => ({ data: { triggerId: trigger.id } }));
    if (jobs.length > 0)
      await boss.insert(DISPATCH_QUEUE, jobs, { db: transactionDb(client, { prepare: true }) });
    return inserted;
  });
  if (recorded.some((trigger) => trigger.created)) wakeWorkers(boss, DISPATCH_QUEUE);
  return recorded;
}
