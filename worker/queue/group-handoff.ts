import type pg from "pg";
import type { PgBoss } from "pg-boss";
import { transactionDb } from "../../db/boss.ts";
import { nextInGroup } from "../../db/concurrency-groups.ts";
import { settleTriggerIn } from "../../db/trigger-status.ts";
import type { ConfigSnapshot, Pipeline } from "../../shared/config/types.ts";
import type { Logger } from "../../shared/logger.ts";
import { type InvocationJob, laneQueue } from "../../shared/queues.ts";
import type { CredentialCooldowns } from "../credentials/cooldowns.ts";
import type { CredentialSecrets } from "../credentials/secrets.ts";
import { laneFor } from "./lanes.ts";

export interface HandoffDeps {
  boss: PgBoss;
  config: Readonly<ConfigSnapshot>;
  cooldowns: CredentialCooldowns;
  secrets: CredentialSecrets;
  logger: Logger;
}

/**
 * Hands a concurrency group on, in the caller's transaction, which holds the group's lock (taken
 * before any invocation row of the group): once its running invocation ended, was cancelled or
 * went back to the queue, the group's newest waiting invocation gets its lane job (the others end
 * `superseded`, their triggers settled). Nothing polls for it. Returns the lane to wake after the
 * commit, if any. A crash before the commit leaves the waiting invocation queued without a job,
 * with nothing of its group running: the reconcile rule sends it one (db/queue-jobs.ts).
 */
export async function handOffGroup(
  deps: HandoffDeps,
  client: pg.ClientBase,
  group: string,
  pipeline: Pipeline | undefined,
  /**
   * a run released to wait for a credential is offered again only after this many seconds (one a
   * spent period budget holds: at the reset, with its priority, worker/run/budget-periods.ts)
   */
  recheck?: { invocationId: string; seconds: number; priority?: number },
): Promise<{ lane?: string; started?: string }> {
  const next = await nextInGroup(client, group);
  const triggers = [...new Set(next.superseded.flatMap((run) => (run.trigger_id ? [run.trigger_id] : [])))];
  for (const triggerId of triggers.sort()) await settleTriggerIn(client, triggerId);
  for (const run of next.superseded)
    deps.logger.info("invocation superseded", { event: "invocation.superseded", invocation: run.id, group });
  if (!next.start) return {};
  const lane = pipeline
    ? laneFor(pipeline, deps.config, deps.cooldowns, deps.secrets).queue
    : laneQueue(next.start.target);
  const job: InvocationJob = { invocationId: next.start.id, group };
  const later =
    recheck?.invocationId === next.start.id
      ? { startAfter: recheck.seconds, ...(recheck.priority ? { priority: recheck.priority } : {}) }
      : {};
  await deps.boss.send(lane, job, { db: transactionDb(client), ...later });
  return { lane, started: next.start.id };
}
