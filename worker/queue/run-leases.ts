import type pg from "pg";
import type { Db, PgBoss } from "pg-boss";
import { ensureQueue, transactionDb } from "../../db/boss.ts";

/**
 * Every run a worker holds is backed by a pg-boss job it keeps `active`: its lease. The worker
 * touches it (pg-boss's job heartbeat, `touch`) every `worker.heartbeat`; pg-boss's monitor fails a
 * lease that missed MISSED_HEARTBEATS of them (the queue's `heartbeatSeconds`), or that outlived its
 * `expireInSeconds`, and moves it to the LOST_QUEUE dead-letter queue. Any worker's sweeper takes it
 * from there and queues the run again (worker/queue/reaper.ts). A worker that comes back from a partition
 * finds its lease failed: its `touch`, fenced to the attempt it fetched, changes nothing, so it
 * stops the run and records nothing.
 *
 * A lease is created and fetched in the transaction that claims its run, so no other worker can
 * see it before it is active; leases are never retried (retryLimit 0), so nothing else is ever
 * waiting in LEASE_QUEUE to be fetched by mistake.
 *
 * A run's first lane job is sent as a lease already (laneLeaseOptions: retryLimit 0, the lost-lease
 * queue as its dead letter, a heartbeat bound and the lease expiry) and names the attempt its claim
 * makes. The worker that claims the run through it keeps that job active as the run's lease
 * (laneLease) instead of inserting, fetching and completing a second job: three statements fewer a
 * run. A lane job without an attempt (a retry, a resend, an orchestrator's task, one sent by an
 * earlier version) is completed at its claim and the run gets a lease of LEASE_QUEUE as before.
 */
export const LEASE_QUEUE = "svc-run-lease";
export const LOST_QUEUE = "svc-run-lost";
export const MISSED_HEARTBEATS = 3;
/** pg-boss refuses a heartbeatSeconds below 10 */
const MIN_LEASE_SECONDS = 10;
/** pg-boss's longest expiry */
const MAX_EXPIRY_SECONDS = 24 * 3600;

/** The attempt of a lease job this worker fetched: pg-boss fences touch and complete to it. */
export interface Lease {
  /** LEASE_QUEUE, or the lane whose job the run was claimed through */
  queue: string;
  id: string;
  retryCount: number;
  /** an instant before the claiming transaction began: pg-boss's clock for the lease started after it */
  takenAt: Instant;
  /** its heartbeatSeconds: pg-boss fails it no sooner than this long after its last renewal */
  seconds: number;
}

/** What a lease says, so the sweeper can tell whether the run is still the one that lost it. */
export interface LeaseData {
  invocationId: string;
  /** absent for a lane job held as the lease: the attempt alone tells the claims of a run apart */
  workerId?: string;
  attempts: number;
}

/** The lease's heartbeatSeconds: MISSED_HEARTBEATS heartbeats, at least pg-boss's floor of 10 s. */
export function leaseSeconds(heartbeatMs: number): number {
  return Math.max(MIN_LEASE_SECONDS, Math.ceil((MISSED_HEARTBEATS * heartbeatMs) / 1000));
}

/**
 * The lease queues. A lease expires after every target's timeout plus an hour for setup steps (at
 * most pg-boss's 24 h): a run still going by then is treated as lost.
 */
export async function ensureLeaseQueues(boss: PgBoss, targets: Targets): Promise<void> {
  await ensureQueue(boss, LOST_QUEUE, { retryLimit: 5, expireInSeconds: 600 });
  await ensureQueue(boss, LEASE_QUEUE, {
    retryLimit: 0,
    expireInSeconds: leaseExpirySeconds(targets),
    deadLetter: LOST_QUEUE,
  });
}

type Targets = Readonly<Record<string, { timeoutMs: number }>>;

function leaseExpirySeconds(targets: Targets): number {
  const allTargets = Object.values(targets).reduce((sum, target) => sum + target.timeoutMs, 0);
  return Math.min(MAX_EXPIRY_SECONDS, Math.ceil(allTargets / 1000) + 3600);
}

/**
 * The per-job options that make a run's first lane job a lease once claimed, whatever the lane
 * queue's own options (an earlier version created lanes with retries and no dead letter): it is
 * never retried, a failed one goes to the lost-lease queue, and pg-boss holds it to the heartbeat
 * bound and expiry of a lease.
 */
export function laneLeaseOptions(targets: Targets, heartbeatSeconds: number) {
  return {
    retryLimit: 0,
    deadLetter: LOST_QUEUE,
    heartbeatSeconds,
    expireInSeconds: leaseExpirySeconds(targets),
  };
}

/**
 * The lane job a run was just claimed through, kept as its lease: when it was sent as one
 * (laneLeaseOptions) for exactly the attempt this claim made, and pg-boss allows this worker's
 * heartbeats at least as long as its own bound. Otherwise undefined: the job is completed and the
 * run takes a lease of LEASE_QUEUE.
 */
export function laneLease(
  lane: string,
  job: { id: string; retryCount: number; heartbeatSeconds: number | null; data: { attempt?: number } },
  attempts: number,
  heartbeatSeconds: number,
  takenAt: Instant,
): Lease | undefined {
  if (job.data.attempt !== attempts) return undefined;
  if (job.heartbeatSeconds === null || job.heartbeatSeconds < heartbeatSeconds) return undefined;
  return { queue: lane, id: job.id, retryCount: job.retryCount, takenAt, seconds: job.heartbeatSeconds };
}

/**
 * Leases for runs just claimed in `client`'s transaction: inserted and fetched in it, so they are
 * active from the commit on. The heartbeat bound is per job: each worker's own `worker.heartbeat`.
 */
export async function takeLeases(
  boss: PgBoss,
  client: pg.ClientBase,
  runs: readonly LeaseData[],
  heartbeatSeconds: number,
  takenAt: Instant,
): Promise<Map<string, Lease>> {
  if (runs.length === 0) return new Map();
  const db = transactionDb(client, { prepare: true });
  await boss.insert(
    LEASE_QUEUE,
    runs.map((data) => ({ data, heartbeatSeconds })),
    { db },
  );
  const jobs = await boss.fetch<LeaseData>(LEASE_QUEUE, {
    batchSize: runs.length,
    ignoreStartAfter: true,
    db,
  });
  return new Map(
    jobs.map((job) => [
      job.data.invocationId,
      { queue: LEASE_QUEUE, id: job.id, retryCount: job.retryCount, takenAt, seconds: heartbeatSeconds },
    ]),
  );
}

/**
 * A moment by two clocks: the monotonic one (immune to clock steps) and the wall clock (which,
 * unlike the monotonic one on Linux, goes on while a host or VM is suspended). A local bound holds
 * only while both say so.
 */
export interface Instant {
  mono: number;
  wall: number;
}

export function instant(): Instant {
  return { mono: performance.now(), wall: Date.now() };
}

/** An instant no bound counts from: every check goes to the database. */
export const NEVER: Instant = { mono: Number.NEGATIVE_INFINITY, wall: Number.NEGATIVE_INFINITY };

/** True while less than `ms` has passed since `from` by both clocks. */
export function within(from: Instant, ms: number): boolean {
  return performance.now() - from.mono < ms && Date.now() - from.wall < ms;
}

/** Renews the lease; false once pg-boss failed it (this worker was judged lost) or it was completed. */
export async function touchLease(boss: PgBoss, lease: Lease): Promise<boolean> {
  // pg-boss documents a lapsed attempt as "not affected"; its typings leave CommandResponse empty
  const touched = (await boss.touch(lease.queue, attempt(lease))) as { affected?: number };
  return (touched.affected ?? 0) > 0;
}

/**
 * The run ended (however): its lease is done, in `db`'s transaction when given (a finished run
 * completes it with its end, in one commit). A lease already failed is left as pg-boss has it.
 */
export async function completeLease(boss: PgBoss, lease: Lease, db?: Db): Promise<void> {
  await boss.complete(lease.queue, attempt(lease), null, db ? { db } : {});
}

function attempt(lease: Lease): { id: string; retryCount: number } {
  return { id: lease.id, retryCount: lease.retryCount };
}
