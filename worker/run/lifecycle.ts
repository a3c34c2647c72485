import type { PgBoss } from "pg-boss";
import { revokeInvocationTokens } from "../../db/api_tokens.ts";
import { transactionDb, wakeWorkers } from "../../db/boss.ts";
import { lockGroups } from "../../db/concurrency-groups.ts";
import {
  finishInvocation,
  getInvocationStatus,
  heartbeatInvocation,
  type InvocationRow,
  releaseInvocation,
} from "../../db/invocations.ts";
import { cancelOrchestratedTasks } from "../../db/orchestrated-tasks.ts";
import { closeOpenTasks } from "../../db/tasks.ts";
import { withTransaction } from "../../db/transaction.ts";
import { settleLockedTrigger, settleTrigger } from "../../db/trigger-status.ts";
import { runPipeline } from "../../shared/config/pipeline/shadow.ts";
import type { Pipeline } from "../../shared/config/types.ts";
import { diagnostic } from "../../shared/diagnostics.ts";
import { type InvocationJob, laneQueue } from "../../shared/queues.ts";
import { type Workspace, workspacePaths } from "../../shared/workspace-layout.ts";
import { recordInvocationEnd } from "../metrics.ts";
import { noteRunEnd } from "../outputs/progress.ts";
import type { KnownRun } from "../queue/claim-loop.ts";
import { handOffGroup } from "../queue/group-handoff.ts";
import { laneFor } from "../queue/lanes.ts";
import { completeLease, type Lease, touchLease } from "../queue/run-leases.ts";
import type { BudgetResume } from "./budget-periods.ts";
import { breakerToReset, recordRunFailure } from "./circuit-breaker.ts";
import { type HeldWatch, watchHeld } from "./held-watch.ts";
import { runInvocation } from "./phases.ts";
import { CANCELLED, type RunDeps, type RunEnd } from "./types.ts";
import { removeCheckout } from "./workspace.ts";

/** What holding a run needs beyond running it: its queue, its heartbeat, and the worker's runs. */
export interface HoldDeps extends RunDeps {
  boss: PgBoss;
  heartbeatMs: number;
  staleAfterMs: number;
  /** the runs of this worker by invocation id, so a cancellation can reach the one it names */
  runs: Map<string, RunHandle>;
}

export interface RunHandle {
  /** the invocation was cancelled through the API: stop it and record the cancellation */
  cancel(): void;
}

const ORCHESTRATOR_ENDED = diagnostic(
  "cancelled",
  "the orchestrator ended before the task finished; the task was cancelled and its processes killed",
);

/** Slack kept off the local bound of a held claim: event-loop stalls, clock rates. */
const HELD_MARGIN_MS = 1_000;

/** A run waiting for a credential is offered again after this long, not at once. */
const RECHECK_SECONDS = 2;

/**
 * Runs an invocation this worker holds (claimed from a lane job, or created claimed by dispatch):
 * watches it (heartbeat, cancellation, shutdown), runs its phases (run-invocation.ts), then records
 * how it ended. Losing the claim (a reaper judged this worker gone) aborts the run.
 */
export async function runClaimedInvocation(
  deps: HoldDeps,
  claimed: InvocationRow,
  shutdown: AbortSignal,
  known: KnownRun,
  lease?: Lease,
): Promise<void> {
  const invocationId = claimed.id;
  const { workload } = known;
  const pipeline = runPipeline(deps.config, workload.pipeline, claimed.shadow);
  const paths = workspacePaths(deps.config.dir, workload.id, invocationId);
  const watch = watchRun(deps, invocationId, shutdown, lease);
  let end: RunEnd;
  try {
    deps.logger.info("invocation started", {
      event: "invocation.started",
      invocation: invocationId,
      workload: workload.id,
      pipeline: workload.pipeline,
      attempt: claimed.attempts,
    });
    end = pipeline
      ? await runInvocation(deps, {
          ...{
            invocationId,
            workload,
            pipeline,
            paths,
            target: claimed.target,
            group: claimed.concurrency_group,
            outputsHeld: claimed.outputs_held,
            shadow: claimed.shadow,
          },
          signal: watch.signal,
          event: known.event,
          trigger: known.trigger,
          breakerOpenUntil: known.breakerOpenUntil,
          isCancelled: watch.cancelled,
          stillHeld: watch.stillHeld,
        })
      : {
          kind: "failed",
          diagnostic: diagnostic("no_matching_pipeline", removedPipeline(workload.pipeline, claimed.shadow)),
        };
  } catch (error) {
    const message = `the run failed inside the worker: ${(error as Error).message}`;
    end = { kind: "failed", diagnostic: diagnostic("agent_failed", message) };
  } finally {
    watch.stop();
  }
  const group = claimed.concurrency_group ?? null;
  let settled: boolean;
  try {
    const ended = { invocationId, workload, pipeline, paths, end, watch, lease, group };
    settled = await recordEnd(deps, { ...ended, shadow: claimed.shadow });
  } catch (error) {
    if (!databaseUnreachable(error)) throw error;
    // Safe to end here: nothing of the run was recorded or published without its claim proven, its
    // row stays `running` under this worker, and its lease, no longer renewed, lapses within the
    // bound; the reaper queues it again (or fails it worker_lost). Thrown on, the slot would log a
    // failure of the worker for what is a run left to its lease
    abandoned(deps, invocationId, `its end could not be recorded: ${(error as Error).message}`);
    return;
  }
  // sticky comments this run left "in progress" say how it ended (logged, never thrown: progress.ts)
  await noteRunEnd(deps, invocationId, pipeline);
  // a run that finished completed its lease with its end; any other end completes it here. A lease
  // pg-boss already failed stays failed: the complete is fenced to this attempt
  if (lease && !settled && !watch.claimLost())
    await bestEffort(deps, "complete_lease", completeLease(deps.boss, lease));
}

function removedPipeline(name: string, shadow = false): string {
  if (shadow)
    return `the shadow candidate of pipeline ${name} is no longer configured on this worker; it was removed before the run started`;
  return `pipeline ${name} is no longer configured on this worker; it was removed before the run started`;
}

type RunWatch = HeldWatch;

/**
 * The run's watch (held-watch.ts). A heartbeat renews the run's pg-boss lease (worker/queue/run-leases.ts)
 * and `heartbeat_at` on its row; a lease that pg-boss failed, or a row that another worker took,
 * means this worker was judged lost.
 */
function watchRun(deps: HoldDeps, invocationId: string, shutdown: AbortSignal, lease?: Lease): RunWatch {
  const { pool, logger, workerId } = deps;
  let leaseFailed = false;
  return watchHeld({
    shutdown,
    heartbeatMs: deps.heartbeatMs,
    // Within this the claim is certainly held: pg-boss fails a lease no sooner than its
    // heartbeatSeconds after its last renewal, and the stale-heartbeat backstop takes a row no
    // sooner than staleAfterMs after its last heartbeat; both were stamped after the instant counted from.
    ...(lease
      ? {
          heldForMs: Math.min(lease.seconds * 1000, deps.staleAfterMs) - HELD_MARGIN_MS,
          renewedAt: lease.takenAt,
        }
      : {}),
    heartbeat: async () => {
      const [row, leased] = await Promise.all([
        heartbeatInvocation(deps.records, invocationId, workerId),
        lease ? touchLease(deps.boss, lease) : true,
      ]);
      leaseFailed = !leased;
      return row && leased;
    },
    isCancelled: async () => (await getInvocationStatus(pool, invocationId)) === "cancelled",
    register: (cancel) => deps.runs.set(invocationId, { cancel }),
    unregister: () => deps.runs.delete(invocationId),
    onCancel: () =>
      logger.info("invocation cancelled: stopping it", {
        event: "invocation.cancelling",
        invocation: invocationId,
      }),
    onClaimLost: () =>
      logger.warn("invocation claim lost", {
        event: "invocation.claim_lost",
        invocation: invocationId,
        reason: leaseFailed ? "lease failed" : "taken over",
      }),
  });
}

interface Ended {
  invocationId: string;
  workload: KnownRun["workload"];
  pipeline: Pipeline | undefined;
  paths: Workspace;
  end: RunEnd;
  watch: RunWatch;
  lease?: Lease;
  /** the invocation's concurrency group: its next waiting run is handed the group with this end */
  group: string | null;
  /** it runs its pipeline's shadow candidate: released, it goes back to its target's shadow lane */
  shadow: boolean;
}

/**
 * Records how the run ended: abandoned, cancelled, released for retry, or finished with its trigger
 * settled. True when the lease was completed with the end (a finished run: one commit for both).
 */
async function recordEnd(deps: HoldDeps, ended: Ended): Promise<boolean> {
  const { pool, logger } = deps;
  const { invocationId, workload, pipeline, paths, end } = ended;
  // `lost` comes back from a heartbeat that found the claim gone, or found the run cancelled
  if (ended.watch.claimLost() || (end.kind === "lost" && !ended.watch.cancelled())) {
    // another worker took the run over; whatever this one produced is not the record
    abandoned(deps, invocationId, "its claim was lost");
    return false;
  }
  if (ended.watch.cancelled() || end.kind === "cancelled" || end.kind === "lost") {
    await recordCancelled(deps, ended);
    return false;
  }
  if (end.kind === "released") {
    await release(deps, ended, end.credentials === true, end.resume);
    return false;
  }
  // before the trigger settles, so a settled trigger never has a checkout left to remove
  if (pipeline && !pipeline.retainCheckout) await bestEffort(deps, "remove_checkout", removeCheckout(paths));
  // the run's end and its trigger's settlement commit together: one WAL flush, not two
  let handedTo: string | undefined;
  const finished = await withTransaction(pool, async (client) => {
    // the group's lock before the run's row, as every other writer of the group takes them
    if (ended.group) await lockGroups(client, [ended.group]);
    const held = await finishInvocation(
      client,
      invocationId,
      deps.workerId,
      {
        status: end.kind,
        diagnostic: end.kind === "failed" ? end.diagnostic : null,
        result: end.kind === "completed" ? end.result : undefined,
      },
      workload.trigger_id,
      pipeline ? breakerToReset(deps.config, workload.pipeline) : null,
    );
    if (held && workload.trigger_id) await settleLockedTrigger(client, workload.trigger_id);
    // the orchestrator ended: what its tasks have not finished is cancelled, and their processes killed
    if (held && pipeline?.orchestrator)
      await cancelOrchestratedTasks(client, invocationId, ORCHESTRATOR_ENDED);
    if (held && ended.lease)
      await completeLease(deps.boss, ended.lease, transactionDb(client, { prepare: true }));
    if (held && ended.group) handedTo = (await handOffGroup(deps, client, ended.group, pipeline)).lane;
    return held;
  });
  if (handedTo) wakeWorkers(deps.boss, handedTo);
  if (!finished) {
    // cancelled between the end of the run and this write: the cancellation stands
    if ((await getInvocationStatus(pool, invocationId)) === "cancelled") {
      await bestEffort(deps, "close_tasks", closeOpenTasks(pool, invocationId, CANCELLED));
      if (workload.trigger_id) await settleTrigger(pool, workload.trigger_id);
      await bestEffort(deps, "hand_off", handOff(deps, ended));
    } else {
      // taken over between the end of the run and this write: the other attempt's end is the record
      abandoned(deps, invocationId, "its claim was lost");
    }
    return false;
  }
  logger.info(`invocation ${end.kind}`, {
    event: `invocation.${end.kind}`,
    invocation: invocationId,
    pipeline: workload.pipeline,
    code: end.kind === "failed" ? end.diagnostic.code : undefined,
  });
  recordInvocationEnd(
    pool,
    invocationId,
    end.kind,
    end.kind === "failed" ? end.diagnostic.code : undefined,
    logger,
  );
  // consecutive failures of one pipeline open its circuit breaker (docs/outputs.md); a completed
  // run reset the count with its end above
  if (pipeline && end.kind === "failed") await recordRunFailure(deps, workload.pipeline);
  return true;
}

function abandoned(deps: HoldDeps, invocationId: string, reason: string): void {
  deps.logger.warn("run abandoned: nothing of it is recorded", {
    event: "invocation.abandoned",
    invocation: invocationId,
    reason,
  });
}

/**
 * The database did not answer (a partition, a restart): a connection-level failure, never a
 * statement's error, which has a SQLSTATE outside classes 08 and 57, nor a bug of ours.
 */
function databaseUnreachable(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string")
    return /^E[A-Z]+$/.test(code) || code.startsWith("08") || code.startsWith("57");
  return /Connection terminated|timeout exceeded when trying to connect|Query read timeout|connection error/i.test(
    (error as Error).message ?? "",
  );
}

/** The API already wrote `cancelled` (and its diagnostic): never overwrite it; close what is open. */
async function recordCancelled(deps: HoldDeps, ended: Ended): Promise<void> {
  const { pool, logger } = deps;
  const { invocationId, workload, pipeline, paths } = ended;
  await bestEffort(deps, "close_tasks", closeOpenTasks(pool, invocationId, CANCELLED));
  await bestEffort(deps, "cancel_tasks", cancelOrchestratedTasks(pool, invocationId, CANCELLED));
  await bestEffort(deps, "revoke_token", revokeInvocationTokens(deps.records, invocationId));
  if (pipeline && !pipeline.retainCheckout) await bestEffort(deps, "remove_checkout", removeCheckout(paths));
  logger.info("invocation cancelled", {
    event: "invocation.cancelled",
    invocation: invocationId,
    pipeline: workload.pipeline,
  });
  if (workload.trigger_id) await settleTrigger(pool, workload.trigger_id);
  await bestEffort(deps, "hand_off", handOff(deps, ended));
}

/**
 * A run whose cancellation someone else recorded (the API, or a newer event of its group) hands
 * its group on in a transaction of its own. If this fails, or this worker dies first, the
 * reconcile rule sends the waiting run its job (group-handoff.ts), so a failure is only logged.
 */
async function handOff(deps: HoldDeps, ended: Ended): Promise<void> {
  const { group } = ended;
  if (!group) return;
  const { lane } = await withTransaction(deps.pool, async (client) => {
    await lockGroups(client, [group]);
    return handOffGroup(deps, client, group, ended.pipeline);
  });
  if (lane) wakeWorkers(deps.boss, lane);
}

/**
 * Housekeeping after a run's end (open tasks closed, the agent token revoked, the checkout removed)
 * must not keep the end itself from being recorded: a failure is logged, and what it left behind is
 * cleaned up later (tokens expire on their own, the retention sweep removes checkouts).
 */
async function bestEffort(deps: HoldDeps, what: string, work: Promise<unknown>): Promise<void> {
  await work.catch((error) =>
    deps.logger.warn(`${what.replace("_", " ")} failed after the run ended`, {
      event: `invocation.${what}_failed`,
      error: (error as Error).message,
    }),
  );
}

/**
 * Back to `queued` with a fresh lane job, in one transaction, so the run is never lost in between.
 * A grouped run goes back through its group: when a newer event of the group waits, that one runs
 * and this one ends `superseded`. A run a spent period budget holds (`resume`) has its job due at
 * the period's reset, with its priority (budget-periods.ts BudgetResume): nothing offers it before.
 */
async function release(deps: HoldDeps, ended: Ended, waiting: boolean, resume?: BudgetResume) {
  const { invocationId, pipeline, group, shadow } = ended;
  const queue = pipeline
    ? laneFor(pipeline, deps.config, deps.cooldowns, deps.secrets, shadow).queue
    : laneQueue(null, shadow);
  // a run waiting for a credential is not offered again at once: the lane is about to stop,
  // and an immediate job would spin between claim and release until it does
  const later: { seconds: number; priority?: number } | undefined = resume
    ? { seconds: resume.afterSeconds, ...(resume.priority ? { priority: resume.priority } : {}) }
    : waiting
      ? { seconds: RECHECK_SECONDS }
      : undefined;
  await withTransaction(deps.pool, async (client) => {
    if (group) await lockGroups(client, [group]);
    if (!(await releaseInvocation(client, invocationId, deps.workerId))) return;
    if (group) {
      await handOffGroup(deps, client, group, pipeline, later && { invocationId, ...later });
      return;
    }
    const job: InvocationJob = { invocationId };
    await deps.boss.send(queue, job, {
      db: transactionDb(client),
      ...(later
        ? { startAfter: later.seconds, ...(later.priority ? { priority: later.priority } : {}) }
        : {}),
    });
  });
  if (!later) wakeWorkers(deps.boss, queue);
  deps.logger.info("invocation released for retry", {
    event: "invocation.released",
    invocation: invocationId,
    lane: queue,
  });
}
