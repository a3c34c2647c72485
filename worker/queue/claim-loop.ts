import type { PoolClient } from "pg";
import type { Job, PgBoss } from "pg-boss";
import { transactionDb, WAKE_CHANNEL } from "../../db/boss.ts";
import { lockGroups } from "../../db/concurrency-groups.ts";
import type { TriggerEvent } from "../../db/invocations.ts";
import { claimRuns, type InvocationRow } from "../../db/invocations.ts";
import { claimOrchestratedTasks, type OrchestratedTask } from "../../db/orchestrated-tasks.ts";
import { withSavepoint, withTransaction } from "../../db/transaction.ts";
import { DISPATCH_QUEUE, type DispatchJob, type InvocationJob, type LaneJob } from "../../shared/queues.ts";
import type { ResolvedEvent } from "../event/resolve.ts";
import { countClaimed } from "../metrics.ts";
import { afterDispatch } from "./after-dispatch.ts";
import {
  type DispatchClaims,
  type DispatchDeps,
  type DispatchOutcome,
  dispatchTriggers,
} from "./dispatch.ts";
import { claimOrder, targetUsable } from "./lanes.ts";
import { instant, type Lease, type LeaseData, laneLease, takeLeases } from "./run-leases.ts";
import type { Slot, Slots } from "./slots.ts";

/**
 * What the claim already read for a run, so the run does not read it again: dispatch resolved the
 * event; a lane claim read the trigger it resolves from (null: the workload has none).
 */
export interface KnownRun {
  workload: { id: string; trigger_id: string | null; pipeline: string };
  event?: ResolvedEvent;
  trigger?: TriggerEvent | null;
  /** the pipeline's circuit breaker as the claim read it: the time it closes, null when closed */
  breakerOpenUntil: Date | null;
}

export interface ClaimLoopDeps extends DispatchDeps {
  boss: PgBoss;
  workerId: string;
  staleAfterMs: number;
  /** every lane queue this worker serves, with the target it runs (null: the local lane) */
  lanes: ReadonlyMap<string, string | null>;
  slots: Slots;
  /** true while the daemon is drained: nothing is claimed */
  drained(): boolean;
  /** runs an invocation this worker holds, under its pg-boss lease; the claim loop gives it a slot */
  runClaimed(row: InvocationRow, known: KnownRun, lease?: Lease): Promise<void>;
  /** runs an orchestrated task this worker holds (worker/tasks/claim.ts) */
  runClaimedTask(task: OrchestratedTask): Promise<void>;
}

/** What a claim hands a slot: an invocation with what was read for it, or an orchestrated task. */
type Claimed = { invocation: InvocationRow; known: KnownRun; lease?: Lease } | { task: OrchestratedTask };

function isInvocationJob(job: Job<LaneJob>): job is Job<InvocationJob> {
  return !("taskId" in job.data);
}

/** Dispatch jobs fetched per round at least, free slots or not (see takeDispatchJobs). */
const DISPATCH_BATCH = 128;

/** The backstop poll: a lost NOTIFY, delayed jobs (`startAfter`) and retries are found by it. */
const POLL_MS = 1_000;

/**
 * One claim loop per worker process. Woken by a NOTIFY on WAKE_CHANNEL naming a queue (polling is
 * the backstop), it fetches exactly as many jobs as it has free slots, in batches: lane jobs
 * (invocations waiting on a usable target) first, then dispatch jobs. Dispatching a trigger creates
 * its first runnable invocation already claimed by this worker, which runs it at once, in-process.
 * A lane is fetched only while its target is usable, so the jobs of a target whose only credential
 * is dead wait instead of failing. While the daemon is drained nothing is claimed.
 */
export class ClaimLoop {
  readonly #deps: ClaimLoopDeps;
  #closing = false;
  /** look at every queue: the poll fired, the listener reconnected, or a round ran out of room */
  #everything = true;
  /** queues a NOTIFY named, or whose last fetch came back full, not fetched since */
  readonly #notified = new Set<string>();
  /** dispatch jobs whose unguarded dispatch threw: the next round dispatches them under a savepoint */
  readonly #suspects = new Set<string>();
  #wake: (() => void) | undefined;
  #loop: Promise<void> | undefined;
  #listener: { close(): Promise<void> } | undefined;

  constructor(deps: ClaimLoopDeps) {
    this.#deps = deps;
  }

  /** Starts listening and looping. */
  async start(): Promise<void> {
    const queues = new Set([DISPATCH_QUEUE, ...this.#deps.lanes.keys()]);
    const db = this.#deps.boss.getDb();
    this.#listener = await db.listen?.(
      WAKE_CHANNEL,
      (queue) => {
        if (queues.has(queue)) this.poke(queue);
      },
      () => this.poke(),
    );
    this.#loop = this.#run();
  }

  /** Something may be waiting: on `queue`, or (no queue) anywhere. */
  poke(queue?: string): void {
    if (queue) this.#notified.add(queue);
    else this.#everything = true;
    this.#wake?.();
  }

  /**
   * A slot came back: fetch again from the queues that may still hold work (named by a NOTIFY, or
   * whose last fetch came back full). A queue whose last fetch came back short was empty then, and
   * a job sent to it since is followed by a NOTIFY naming it, so it is not looked at again here: a
   * run's end costs no empty fetch per queue.
   */
  slotFreed(): void {
    this.#wake?.();
  }

  /** Stops claiming; runs already started keep going. */
  async stop(): Promise<void> {
    this.#closing = true;
    this.#wake?.();
    await this.#loop;
    // a listener that fails to close had its connection end already: nothing is left to stop
    await this.#listener?.close().catch(() => {}); // its connection is gone already: nothing left to close
  }

  #hasWork(): boolean {
    return this.#everything || this.#notified.size > 0;
  }

  async #run(): Promise<void> {
    const { slots, logger } = this.#deps;
    while (!this.#closing) {
      try {
        if (slots.free > 0 && this.#hasWork() && !this.#deps.drained()) {
          await this.#round();
          continue;
        }
      } catch (error) {
        logger.warn("claiming work failed; retrying after the poll interval", {
          event: "worker.fetch_failed",
          error: (error as Error).message,
        });
      }
      if (this.#closing) break;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          this.#everything = true; // the backstop: look again even without a NOTIFY
          resolve();
        }, POLL_MS);
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.#wake = undefined;
    }
  }

  /** the lanes whose target can run now, in configuration order */
  usableLanes(): string[] {
    const { config, cooldowns, secrets } = this.#deps;
    return [...this.#deps.lanes]
      .filter(([, name]) => {
        const target = name ? config.targets[name] : undefined;
        return !target || targetUsable(target, cooldowns, secrets);
      })
      .map(([lane]) => lane);
  }

  /**
   * One round: the queues there is a reason to look at, live lanes first (runs already waiting),
   * then dispatch, then the shadow lanes (lanes.ts claimOrder), each fetched for exactly the slots
   * still free. A woken queue is fetched alone, so a webhook's NOTIFY costs one fetch, not one per lane.
   */
  async #round(): Promise<void> {
    const all = this.#everything;
    this.#everything = false;
    // shadow lanes last: a shadow run is taken only when no live run waits, dispatched or not
    const order = claimOrder(this.usableLanes(), DISPATCH_QUEUE);
    for (const queue of this.#notified) if (!order.includes(queue)) this.#notified.delete(queue);
    for (const queue of order) {
      if (!all && !this.#notified.has(queue)) continue;
      if (this.#deps.slots.free <= 0 || this.#closing || this.#deps.drained()) {
        if (all) this.#everything = true; // what was not looked at yet waits for the next free slot
        return;
      }
      this.#notified.delete(queue);
      const slots = this.#deps.slots.take(this.#deps.slots.free);
      let fetched = 0;
      try {
        fetched =
          queue === DISPATCH_QUEUE
            ? await this.#takeDispatchJobs(slots)
            : await this.#takeLaneJobs(queue, slots);
      } finally {
        // the slots no run took come back here, whatever was thrown
        for (const slot of slots) slot.release();
      }
      if (fetched >= slots.length) this.#notified.add(queue); // a full batch: there may be more
    }
  }

  #start(slot: Slot, claimed: Claimed): void {
    this.#deps.slots.run(
      slot,
      () =>
        "task" in claimed
          ? this.#deps.runClaimedTask(claimed.task)
          : this.#deps.runClaimed(claimed.invocation, claimed.known, claimed.lease),
      (error) =>
        this.#deps.logger.error("run failed inside the worker", {
          event: "worker.run_failed",
          ...("task" in claimed ? { task: claimed.task.id } : { invocation: claimed.invocation.id }),
          error: (error as Error).message,
        }),
    );
  }

  /**
   * Fetches a batch of lane jobs, claims their invocations (or orchestrated tasks) in one statement
   * that also reads each run's workload and trigger (the run reads neither again), and completes
   * the jobs, all in one transaction (one commit), then starts what it claimed. A job sent as its
   * run's lease (worker/queue/run-leases.ts laneLease) stays active as that lease; every other claimed run
   * takes a lease in the same transaction, and its job, which only carried "claim this invocation"
   * (or this task), is done once the claim is decided either way. A crash before the commit leaves
   * the jobs where they were.
   */
  async #takeLaneJobs(lane: string, slots: Slot[]): Promise<number> {
    const { boss, pool, workerId, staleAfterMs, leaseSeconds } = this.#deps;
    let fetched = 0;
    const runLeases = new Map<string, Lease>();
    const takenAt = instant();
    const claimed = await withTransaction(pool, async (client) => {
      const db = transactionDb(client, { prepare: true });
      const jobs = await boss.fetch<LaneJob>(lane, { batchSize: slots.length, db });
      fetched = jobs.length;
      if (jobs.length === 0) return [];
      const taskIds = jobs.flatMap((job) => ("taskId" in job.data ? [job.data.taskId] : []));
      const jobOf = new Map(jobs.filter(isInvocationJob).map((job) => [job.data.invocationId, job]));
      // a grouped run is claimed only under its concurrency group's lock (db/concurrency-groups.ts)
      const groups = [...jobOf.values()].flatMap((job) => (job.data.group ? [job.data.group] : []));
      await lockGroups(client, groups);
      const runs = await claimRuns(client, [...jobOf.keys()], workerId, staleAfterMs, groups);
      // a run's job sent as its lease stays active as the lease; every other run takes one
      const held: LeaseData[] = [];
      for (const { invocation } of runs) {
        const job = jobOf.get(invocation.id)!;
        const lease = laneLease(lane, job, invocation.attempts, leaseSeconds, takenAt);
        if (lease) runLeases.set(invocation.id, lease);
        else held.push({ invocationId: invocation.id, workerId, attempts: invocation.attempts });
      }
      for (const [id, lease] of await takeLeases(boss, client, held, leaseSeconds, takenAt))
        runLeases.set(id, lease);
      const tasks = await claimOrchestratedTasks(client, taskIds, workerId, staleAfterMs);
      const rows: Claimed[] = [
        ...runs.map(({ invocation, workload, trigger, breakerOpenUntil }) => ({
          invocation,
          known: { workload, trigger, breakerOpenUntil },
          lease: runLeases.get(invocation.id),
        })),
        ...tasks.map((task) => ({ task })),
      ];
      const leaseJobs = new Set([...runLeases.values()].map((lease) => lease.id));
      const done = jobs.filter((job) => !leaseJobs.has(job.id)).map((job) => job.id);
      if (done.length > 0) await boss.complete(lane, done, null, { db });
      return rows;
    });
    countClaimed("lane", claimed.length);
    for (const [index, row] of claimed.entries()) this.#start(slots[index]!, row);
    return fetched;
  }

  /**
   * Fetches a batch of dispatch jobs and dispatches them in one transaction (one commit for the
   * batch; see dispatchTriggers). The batch is at least DISPATCH_BATCH jobs whatever the free slots:
   * a trigger that fires nothing needs no slot, and a run beyond the free slots goes to its lane,
   * where any worker with room claims it. Only as many runs as there are free slots are created claimed
   * by this worker. A batch goes without savepoints first; if it throws, the rollback hands every
   * job back untouched, and the next round, at once, dispatches those jobs under a savepoint each,
   * so the one that fails is failed for a retry alone.
   */
  async #takeDispatchJobs(slots: Slot[]): Promise<number> {
    const { boss, pool, logger } = this.#deps;
    let fetched = 0;
    let unguarded: string[] = [];
    let outcomes: { triggerId: string; outcome: DispatchOutcome }[];
    const claims = {
      workerId: this.#deps.workerId,
      left: this.#closing ? 0 : slots.length,
      takenAt: instant(),
    };
    try {
      outcomes = await withTransaction(pool, async (client) => {
        const jobs = await boss.fetch<DispatchJob>(DISPATCH_QUEUE, {
          batchSize: Math.max(slots.length, DISPATCH_BATCH),
          db: transactionDb(client, { prepare: true }),
        });
        fetched = jobs.length;
        if (jobs.length === 0) return [];
        if (jobs.some((job) => this.#suspects.has(job.id)))
          return this.#dispatchGuarded(client, jobs, claims);
        unguarded = jobs.map((job) => job.id);
        return dispatchTriggers(this.#deps, client, jobs, claims);
      });
    } catch (error) {
      if (unguarded.length === 0) throw error;
      // a job that another worker took meanwhile would stay here forever: keep the set small
      if (this.#suspects.size >= 1_000) this.#suspects.clear();
      for (const job of unguarded) this.#suspects.add(job);
      logger.debug("dispatch failed without savepoints; retrying the batch under them", {
        event: "dispatch.retry_guarded",
        jobs: unguarded.length,
        error: (error as Error).message,
      });
      this.#notified.add(DISPATCH_QUEUE);
      return fetched;
    }
    // counted once committed: a batch retried under savepoints is not counted twice
    countClaimed("dispatch", outcomes.length);
    // the runs first, the logs after
    let next = 0;
    for (const { outcome } of outcomes) {
      const run = outcome.kind === "dispatched" ? outcome.claimed : undefined;
      if (run) this.#start(slots[next++]!, { invocation: run.invocation, known: run, lease: run.lease });
    }
    for (const { triggerId, outcome } of outcomes) afterDispatch(this.#deps, triggerId, outcome);
    // a full batch tells the round there may be more
    return fetched >= Math.max(slots.length, DISPATCH_BATCH) ? Number.POSITIVE_INFINITY : 0;
  }

  /** Dispatches each job under its own savepoint; a failing one is failed (pg-boss retries it) alone. */
  async #dispatchGuarded(
    client: PoolClient,
    jobs: { id: string; data: DispatchJob }[],
    claims: DispatchClaims,
  ): Promise<{ triggerId: string; outcome: DispatchOutcome }[]> {
    const outcomes: { triggerId: string; outcome: DispatchOutcome }[] = [];
    for (const job of jobs) {
      this.#suspects.delete(job.id);
      const claimsBefore = claims.left;
      try {
        const dispatched = await withSavepoint(client, "dispatch", () =>
          dispatchTriggers(this.#deps, client, [job], claims),
        );
        outcomes.push(...dispatched);
      } catch (error) {
        claims.left = claimsBefore;
        this.#deps.logger.warn("dispatch failed; the job is retried", {
          event: "dispatch.failed",
          trigger: job.data.triggerId,
          error: (error as Error).message,
        });
        await this.#deps.boss.fail(DISPATCH_QUEUE, job.id, null, { db: transactionDb(client) });
      }
    }
    return outcomes;
  }
}
