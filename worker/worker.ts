import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import pg from "pg";
import type { PgBoss } from "pg-boss";
import { ensureLaneQueue, NOTIFY_CHANNEL, startBoss, transactionDb } from "../db/boss.ts";
import { createPool } from "../db/connect.ts";
import { type DrainState, readDrain } from "../db/daemon-state.ts";
import {
  CANCEL_CHANNEL,
  claimAnnouncedTrigger,
  claimInvocations,
  type InvocationRow,
} from "../db/invocations.ts";
import { migrate } from "../db/migrate.ts";
import { withTransaction, withTransactionOpenedBy } from "../db/transaction.ts";
import { parseAnnouncement, TRIGGER_CHANNEL, type TriggerAnnouncement } from "../db/trigger-announcements.ts";
import { lockQueuedTriggerStatement } from "../db/trigger-status.ts";
import type { ConfigSnapshot } from "../shared/config/types.ts";
import { newId } from "../shared/ids.ts";
import { openKnowledgeForRole } from "../shared/knowledge/boot.ts";
import type { Logger } from "../shared/logger.ts";
import { DISPATCH_QUEUE, type DispatchJob, type InvocationJob, laneQueue } from "../shared/queues.ts";
import { CredentialCooldowns } from "./credentials/cooldowns.ts";
import { CoolingProbe } from "./credentials/probe.ts";
import { CredentialSecrets } from "./credentials/secrets.ts";
import {
  afterDispatch,
  type ClaimedRun,
  type DispatchOptions,
  type DispatchOutcome,
  dispatchInTransaction,
  plannedClaim,
  resolveEvent,
} from "./dispatch.ts";
import { type ExecuteDeps, type RunHandle, runClaimedInvocation } from "./execute-invocation.ts";
import { type HeadStart, takeHeadStart } from "./head-start.ts";
import { LOCAL_LANE, targetUsable } from "./lanes.ts";
import { reapStaleInvocations } from "./reaper.ts";
import { sweepWorkspaces } from "./retention.ts";
import { startSchedules } from "./schedules.ts";
import { Spawner } from "./spawner.ts";
import { makeNewRunDirectoriesNow, removeRunDirectories, workspacePaths } from "./workspace.ts";

export interface WorkerOptions {
  config: Readonly<ConfigSnapshot>;
  databaseUrl: string;
  logger: Logger;
  env?: NodeJS.ProcessEnv;
  /** how often a running invocation proves its worker alive */
  heartbeatMs?: number;
  /** a running invocation without a heartbeat for this long belongs to a lost worker */
  staleAfterMs?: number;
  reapIntervalMs?: number;
  /** the throttle of cooling-credential probes */
  probeIntervalMs?: number;
  /** attempts before a lost run fails with `worker_lost` */
  maxAttempts?: number;
  sweepIntervalMs?: number;
}

export interface RunningWorker {
  id: string;
  /** stop claiming, let running work finish for up to `graceMs`, then release what is left for retry */
  stop(graceMs?: number): Promise<void>;
}

/** The backstop poll: a lost NOTIFY, delayed jobs (`startAfter`) and retries are found by it. */
const POLL_MS = 1_000;
/** How long a read of the drain switch is trusted. */
const DRAIN_TTL_MS = 1_000;

/**
 * `svc worker`: one claim loop per process. Woken by LISTEN/NOTIFY (polling is the backstop), it
 * fetches exactly as many jobs as it has free slots: lane jobs (invocations waiting on a usable
 * target) first, then dispatch jobs. A trigger the ingress announced by name is dispatched without
 * fetching its job first (see takeAnnounced). Dispatching a trigger creates its first runnable
 * invocation already claimed by this worker, which runs it at once, in-process: no second trip
 * through the queue. A lane is fetched only while its target is usable, so the jobs of a target whose only
 * credential is dead wait instead of failing. While the daemon is drained nothing is claimed.
 */
export async function startWorker(options: WorkerOptions): Promise<RunningWorker> {
  const { config, logger } = options;
  const env = options.env ?? process.env;
  const id = `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
  const heartbeatMs = options.heartbeatMs ?? 5_000;
  const staleAfterMs = options.staleAfterMs ?? Math.max(heartbeatMs * 6, 30_000);
  const concurrency = Math.max(1, config.worker.concurrency);
  // knowledge sources found → qmd at its floor and a current index, or no start
  const knowledge = await openKnowledgeForRole(config, logger);
  const pool: pg.Pool = createPool(options.databaseUrl, {
    max: concurrency + 4,
    applicationName: "svc-worker",
  });
  // the runs' own records commit asynchronously (see ExecuteDeps.records)
  const records = new pg.Pool({
    connectionString: options.databaseUrl,
    max: concurrency + 1,
    application_name: "svc-worker-records",
    options: "-c synchronous_commit=off",
    connectionTimeoutMillis: 5_000,
    query_timeout: 30_000,
  });
  records.on("error", () => {});
  let boss: PgBoss | undefined;
  let spawner: Spawner | undefined;
  const listeners: { close(): Promise<void> }[] = [];
  try {
    await migrate(pool);
    const cooldowns = await CredentialCooldowns.load(pool, logger);
    const secrets = await CredentialSecrets.resolve(config, pool, env);
    // the claim loop below does its own LISTEN; pg-boss's work() fetchers are not used
    boss = await startBoss({ url: options.databaseUrl, listen: false, max: 4 });
    const lanes = new Map<string, string | null>([[LOCAL_LANE, null]]);
    for (const target of Object.values(config.targets)) lanes.set(laneQueue(target.name), target.name);
    for (const lane of lanes.keys()) await ensureLaneQueue(boss, lane, config.targets);
    spawner = await Spawner.start();
    listeners.push(
      await startSchedules({ config, databaseUrl: options.databaseUrl, pool, boss, logger, env }),
    );

    const shutdown = new AbortController();
    const inFlight = new Set<Promise<void>>();
    const runs = new Map<string, RunHandle>();
    const deps: ExecuteDeps = {
      pool,
      records,
      boss,
      config,
      cooldowns,
      secrets,
      logger,
      workerId: id,
      heartbeatMs,
      staleAfterMs,
      spawner,
      daemonUrl: daemonUrl(config, env),
      runs,
      knowledge,
    };
    const dispatchDeps = { pool, boss, config, cooldowns, secrets, logger };

    // ---- the claim loop ----
    let closing = false;
    let free = concurrency;
    /** look at every queue: the poll fired, the listener reconnected, or a round ran out of room */
    let everything = true;
    /** queues a NOTIFY named, or whose last fetch came back full, not fetched since */
    const notified = new Set<string>();
    /** triggers announced by name while this worker had a free slot, oldest first */
    const announced: TriggerAnnouncement[] = [];
    const hasWork = () => everything || notified.size > 0 || announced.length > 0;
    let wake: (() => void) | undefined;
    const poke = (queue?: string) => {
      if (queue) notified.add(queue);
      else everything = true;
      wake?.();
    };
    const queues = new Set([DISPATCH_QUEUE, ...lanes.keys()]);
    const listen = boss.getDb().listen?.bind(boss.getDb());
    if (listen) {
      listeners.push(
        await listen(
          NOTIFY_CHANNEL,
          (queue) => {
            if (queues.has(queue)) poke(queue);
          },
          () => poke(),
        ),
      );
      listeners.push(
        await listen(
          TRIGGER_CHANNEL,
          (payload) => {
            const announcement = parseAnnouncement(payload);
            if (!announcement) return;
            // a busy worker leaves it to one with room; if none has, the job waits in the queue
            if (free - announced.length > 0 && !closing) announced.push(announcement);
            else notified.add(DISPATCH_QUEUE);
            wake?.();
          },
          () => poke(),
        ),
      );
      listeners.push(
        await listen(
          CANCEL_CHANNEL,
          (invocation) => runs.get(invocation)?.cancel(),
          () => {},
        ),
      );
    }

    // the drain switch is read off the claim path: at start-up, then every DRAIN_TTL_MS
    let drain: DrainState | null = null;
    const readDrainSwitch = async () => {
      const value = await readDrain(pool);
      if (Boolean(value) !== Boolean(drain)) {
        if (value)
          logger.warn("daemon drained: claiming no new work; running work finishes", {
            event: "worker.drained",
            since: value.since,
            by: value.by,
          });
        else logger.info("daemon resumed: claiming work again", { event: "worker.resumed" });
      }
      const resumed = drain !== null && value === null;
      drain = value;
      if (resumed) poke();
    };
    await readDrainSwitch();

    const start = (work: () => Promise<void>) => {
      const promise = work()
        .catch((error) => {
          logger.error("run failed inside the worker", {
            event: "worker.run_failed",
            error: (error as Error).message,
          });
        })
        .finally(() => {
          inFlight.delete(promise);
          free += 1;
          if (hasWork()) wake?.();
        });
      inFlight.add(promise);
    };

    const usableLanes = () =>
      [...lanes].filter(([, targetName]) => {
        const target = targetName ? config.targets[targetName] : undefined;
        return !target || targetUsable(target, cooldowns, secrets);
      });

    /**
     * Fetches up to `room` lane jobs, claims their invocations in one statement and completes the
     * jobs, all in one transaction (one commit), then starts what it claimed. The job only carried
     * "claim this invocation": it is done once the claim is decided either way. A crash before the
     * commit leaves the jobs where they were.
     */
    const takeLaneJobs = async (lane: string, room: number): Promise<number> => {
      free -= room;
      let fetched = 0;
      let claimed: InvocationRow[] = [];
      try {
        await withTransaction(pool, async (client) => {
          const db = transactionDb(client);
          const jobs = await boss!.fetch<InvocationJob>(lane, { batchSize: room, db });
          fetched = jobs.length;
          if (jobs.length === 0) return;
          claimed = await claimInvocations(
            client,
            jobs.map((job) => job.data.invocationId),
            id,
            staleAfterMs,
          );
          await boss!.complete(
            lane,
            jobs.map((job) => job.id),
            null,
            { db },
          );
        });
      } finally {
        free += room - claimed.length;
      }
      for (const row of claimed) start(() => runClaimedInvocation(deps, row, shutdown.signal));
      return fetched;
    };

    /** dispatch jobs whose unguarded dispatch threw: the next round dispatches them under a savepoint */
    const suspects = new Set<string>();

    /** the head starts taken in one dispatch transaction, to abandon whatever part of it rolls back */
    const headStarts = () => {
      const taken: HeadStart[] = [];
      const take: DispatchOptions["headStart"] = (claim) => {
        const head = spawner ? takeHeadStart({ config, spawner, ...claim }) : undefined;
        if (head) taken.push(head);
        return head;
      };
      return { taken, take };
    };

    /** Starts the run a dispatch created claimed by this worker, if it created one. */
    const startClaimed = (outcome: DispatchOutcome): boolean => {
      const run = outcome.kind === "dispatched" ? outcome.claimed : undefined;
      if (run) start(() => runClaimedInvocation(deps, run.invocation, shutdown.signal, run));
      return run !== undefined;
    };

    /**
     * After an announced trigger's dispatch committed: its run first, then the logs, then its job,
     * which only said "dispatch this trigger" (one left behind is fetched later and finds its
     * trigger dispatched).
     */
    const afterAnnounced = (announcement: TriggerAnnouncement, outcome: DispatchOutcome) => {
      if (!startClaimed(outcome)) free += 1;
      afterDispatch(dispatchDeps, announcement.triggerId, outcome);
      boss!.complete(DISPATCH_QUEUE, announcement.jobId, null, { includeQueued: true }).catch(() => {});
    };

    /** An announced trigger's dispatch failed: its job is still queued, and the next round fetches it. */
    const announcedFailed = (triggerId: string, error: unknown) => {
      free += 1;
      logger.debug("dispatch of an announced trigger failed; its job is fetched instead", {
        event: "dispatch.announced_failed",
        trigger: triggerId,
        error: (error as Error).message,
      });
      notified.add(DISPATCH_QUEUE);
    };

    /**
     * Dispatches a trigger the ingress announced, without fetching its job: one statement opens
     * the transaction and locks the trigger if it is still `queued` and no other transaction holds
     * it, so of the workers that heard the announcement the first one dispatches it and the others
     * skip it without waiting, having started nothing. Its job is completed after the commit; a
     * worker that fetched the job meanwhile waits on the trigger's lock, then finds it dispatched.
     * This transaction never waits on a lock (the job's row included), so it deadlocks with nothing.
     * If it fails, the job is still queued: the next round fetches it, under the usual guards.
     */
    const takeAnnounced = async (announcement: TriggerAnnouncement): Promise<void> => {
      const planned = closing ? undefined : plannedClaim(dispatchDeps, announcement);
      if (planned) return claimAnnounced(announcement, planned);
      const { triggerId } = announcement;
      free -= 1;
      const heads = headStarts();
      let outcome: DispatchOutcome | undefined;
      try {
        outcome = await withTransactionOpenedBy(
          pool,
          lockQueuedTriggerStatement(triggerId),
          async (client, locked) => {
            const trigger = locked.rows[0];
            if (!trigger) return undefined;
            return dispatchInTransaction(dispatchDeps, client, triggerId, {
              locked: trigger,
              claimFor: closing ? undefined : id,
              headStart: heads.take,
            });
          },
        );
      } catch (error) {
        for (const head of heads.taken) head.abandon();
        announcedFailed(triggerId, error);
        return;
      }
      if (outcome) afterAnnounced(announcement, outcome);
      else free += 1;
    };

    /**
     * Fetches up to `room` dispatch jobs and dispatches them in one transaction (one commit for the
     * batch; a savepoint per trigger, so a trigger that fails to dispatch is failed for a retry
     * alone). A lone job goes without the savepoint: it would cost two round trips on the path every
     * webhook takes from POST to its first step. If that dispatch throws, the rollback hands the job
     * back untouched, and the next round, at once, takes it under a savepoint and fails it there.
     * Each dispatch may hand back one run, created claimed by this worker, to start here.
     */
    const takeDispatchJobs = async (room: number): Promise<number> => {
      free -= room;
      let fetched = 0;
      let unguarded: { job: string; trigger: string } | undefined;
      const outcomes: { triggerId: string; outcome: DispatchOutcome }[] = [];
      const { taken: heads, take: headStart } = headStarts();
      try {
        await withTransaction(pool, async (client) => {
          const db = transactionDb(client);
          const jobs = await boss!.fetch<DispatchJob>(DISPATCH_QUEUE, { batchSize: room, db });
          fetched = jobs.length;
          const options = (job: (typeof jobs)[number]): DispatchOptions => ({
            jobId: job.id,
            claimFor: closing ? undefined : id,
            headStart,
          });
          const lone = jobs.length === 1 ? jobs[0]! : undefined;
          if (lone && !suspects.has(lone.id)) {
            unguarded = { job: lone.id, trigger: lone.data.triggerId };
            const outcome = await dispatchInTransaction(
              dispatchDeps,
              client,
              lone.data.triggerId,
              options(lone),
            );
            outcomes.push({ triggerId: lone.data.triggerId, outcome });
            return;
          }
          for (const job of jobs) {
            suspects.delete(job.id);
            const headsBefore = heads.length;
            await client.query("SAVEPOINT dispatch");
            try {
              const outcome = await dispatchInTransaction(
                dispatchDeps,
                client,
                job.data.triggerId,
                options(job),
              );
              await client.query("RELEASE SAVEPOINT dispatch");
              outcomes.push({ triggerId: job.data.triggerId, outcome });
            } catch (error) {
              await client.query("ROLLBACK TO SAVEPOINT dispatch");
              for (const head of heads.splice(headsBefore)) head.abandon();
              logger.warn("dispatch failed; the job is retried", {
                event: "dispatch.failed",
                trigger: job.data.triggerId,
                error: (error as Error).message,
              });
              await boss!.fail(DISPATCH_QUEUE, job.id, null, { db });
            }
          }
        });
      } catch (error) {
        outcomes.length = 0; // rolled back: nothing was dispatched
        for (const head of heads) head.abandon();
        free += room;
        if (!unguarded) throw error;
        // a job that another worker took meanwhile would stay here forever: keep the set small
        if (suspects.size >= 1_000) suspects.clear();
        suspects.add(unguarded.job);
        logger.debug("dispatch failed without a savepoint; retrying it under one", {
          event: "dispatch.retry_guarded",
          trigger: unguarded.trigger,
          error: (error as Error).message,
        });
        notified.add(DISPATCH_QUEUE);
        return fetched;
      }
      // the runs first, the logs after: a held step is released before anything else
      let runs = 0;
      for (const { outcome } of outcomes) if (startClaimed(outcome)) runs += 1;
      for (const { triggerId, outcome } of outcomes) afterDispatch(dispatchDeps, triggerId, outcome);
      free += room - runs;
      return fetched;
    };

    /**
     * One round: the queues there is a reason to look at, lanes first (runs already waiting), then
     * dispatch, each fetched for exactly the slots still free. A woken queue is fetched alone, so a
     * webhook's NOTIFY costs one fetch, not one per lane.
     */
    const fetchRound = async (): Promise<void> => {
      const all = everything;
      everything = false;
      const order = [...usableLanes().map(([lane]) => lane), DISPATCH_QUEUE];
      for (const queue of notified) if (!order.includes(queue)) notified.delete(queue);
      for (const queue of order) {
        if (queue === DISPATCH_QUEUE) await takeAnnouncements();
        if (!all && !notified.has(queue)) continue;
        if (free <= 0 || closing) {
          if (all) everything = true; // what was not looked at yet waits for the next free slot
          return;
        }
        notified.delete(queue);
        const room = free;
        const got = queue === DISPATCH_QUEUE ? await takeDispatchJobs(room) : await takeLaneJobs(queue, room);
        if (got >= room) notified.add(queue); // a full batch: there may be more
      }
    };

    /**
     * An announced trigger whose dispatch is known from the announcement alone (plannedClaim): one
     * statement claims it, with its commit, while its directories are made; a spare shell then
     * becomes its first setup step (see gates.ts). A trigger that is no longer what the
     * announcement said, or that another worker holds, is left alone: its job is still queued.
     */
    const claimAnnounced = async (
      announcement: TriggerAnnouncement,
      planned: NonNullable<ReturnType<typeof plannedClaim>>,
    ): Promise<void> => {
      const { triggerId, kind, source, eventName } = announcement;
      const { pipeline, target } = planned;
      free -= 1;
      const workloadId = newId("workload");
      const invocationId = newId("invocation");
      const paths = workspacePaths(config.dir, workloadId, invocationId);
      let made = false;
      let claimed: Awaited<ReturnType<typeof claimAnnouncedTrigger>>;
      try {
        claimed = await claimAnnouncedTrigger(
          pool,
          {
            triggerId,
            kind,
            source,
            eventName,
            workloadId,
            pipeline: pipeline.name,
            workspace: paths.root,
            invocationId,
            target,
            workerId: id,
          },
          () => {
            made = makeNewRunDirectoriesNow(paths);
          },
        );
      } catch (error) {
        if (made) removeRunDirectories(paths);
        announcedFailed(triggerId, error);
        return;
      }
      if (!claimed) {
        if (made) removeRunDirectories(paths);
        free += 1;
        return;
      }
      const event = await resolveEvent(pool, { kind, source, eventName, payload: claimed.payload });
      const run: ClaimedRun = {
        invocation: claimed.invocation,
        workload: { id: workloadId, trigger_id: triggerId, pipeline: pipeline.name },
        event,
        headStart: spawner
          ? takeHeadStart({
              config,
              spawner,
              workloadId,
              invocationId,
              pipeline,
              event,
              directoriesMade: made,
            })
          : undefined,
      };
      afterAnnounced(announcement, {
        kind: "dispatched",
        created: [
          { workload: workloadId, invocation: invocationId, pipeline: pipeline.name, lane: "in-process" },
        ],
        claimed: run,
      });
      logger.debug("announced trigger claimed in one statement", {
        event: "dispatch.claimed_announced",
        trigger: triggerId,
      });
    };

    const takeAnnouncements = async (): Promise<void> => {
      while (announced.length > 0 && free > 0 && !closing) await takeAnnounced(announced.shift()!);
      if (announced.length === 0) return;
      // no room left for them: their jobs are in the queue
      announced.length = 0;
      notified.add(DISPATCH_QUEUE);
    };

    const loop = (async () => {
      while (!closing) {
        try {
          if (free > 0 && hasWork() && drain === null) {
            await fetchRound();
            continue;
          }
        } catch (error) {
          logger.warn("claiming work failed; retrying after the poll interval", {
            event: "worker.fetch_failed",
            error: (error as Error).message,
          });
        }
        if (closing) break;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(() => {
            everything = true; // the backstop: look again even without a NOTIFY
            resolve();
          }, POLL_MS);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = undefined;
      }
    })();
    const laneState = new Map<string, boolean>();
    cooldowns.onChange(() => {
      for (const [lane, targetName] of lanes) {
        if (!targetName) continue;
        const usable = targetUsable(config.targets[targetName]!, cooldowns, secrets);
        if (usable !== laneState.get(lane)) {
          laneState.set(lane, usable);
          if (usable) logger.info("lane working", { event: "lane.started", lane });
          else
            logger.warn("lane stopped: its target has no usable credential; its jobs wait", {
              event: "lane.stopped",
              lane,
            });
        }
      }
      poke();
    });
    for (const [lane] of usableLanes()) {
      laneState.set(lane, true);
      logger.info("lane working", { event: "lane.started", lane });
    }
    for (const [lane, targetName] of lanes)
      if (!laneState.has(lane)) {
        laneState.set(lane, false);
        if (targetName)
          logger.warn("lane stopped: its target has no usable credential; its jobs wait", {
            event: "lane.stopped",
            lane,
          });
      }

    const probe = new CoolingProbe({
      config,
      cooldowns,
      secrets,
      logger,
      intervalMs: options.probeIntervalMs ?? 15_000,
    });
    const reaperDeps = {
      pool,
      boss,
      config,
      cooldowns,
      secrets,
      logger,
      staleAfterMs,
      maxAttempts: options.maxAttempts ?? 3,
    };
    const background = (name: string, work: () => Promise<unknown>) => () => {
      work().catch((error) =>
        logger.warn(`${name} failed`, { event: `worker.${name}_failed`, error: (error as Error).message }),
      );
    };
    const timers = [
      setInterval(
        background("reap", () => reapStaleInvocations(reaperDeps)),
        options.reapIntervalMs ?? Math.max(1_000, staleAfterMs / 3),
      ),
      setInterval(background("drain_check", readDrainSwitch), DRAIN_TTL_MS),
      setInterval(
        background("probe", () => probe.tick()),
        Math.min(options.probeIntervalMs ?? 15_000, 1_000),
      ),
      setInterval(
        background("sweep", () => sweepWorkspaces(pool, config)),
        options.sweepIntervalMs ?? 3_600_000,
      ),
    ];
    background("sweep", () => sweepWorkspaces(pool, config))();
    logger.info("worker started", {
      event: "worker.started",
      worker: id,
      concurrency,
      lanes: usableLanes().map(([lane]) => lane),
      spawner: spawner.pid,
    });

    let stopping: Promise<void> | undefined;
    return {
      id,
      stop(graceMs = config.worker.graceMs) {
        stopping ??= (async () => {
          logger.info("worker stopping", {
            event: "worker.stopping",
            worker: id,
            running: inFlight.size,
            graceMs,
          });
          closing = true;
          wake?.();
          for (const timer of timers) clearInterval(timer);
          await loop;
          if (inFlight.size > 0) {
            let timer: NodeJS.Timeout | undefined;
            await Promise.race([
              Promise.allSettled([...inFlight]),
              new Promise((resolve) => {
                timer = setTimeout(resolve, graceMs);
              }),
            ]);
            clearTimeout(timer);
          }
          // past the grace period: kill what still runs and hand it back to the queue
          shutdown.abort();
          while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
          for (const listener of listeners) await listener.close().catch(() => {});
          await boss!.stop({ graceful: true, timeout: 2_000 });
          await spawner?.close();
          await pool.end();
          await records.end();
          logger.info("worker stopped", { event: "worker.stopped", worker: id });
        })();
        return stopping;
      },
    };
  } catch (error) {
    for (const listener of listeners) await listener.close().catch(() => {});
    await spawner?.close().catch(() => {});
    await boss?.stop({ graceful: false }).catch(() => {});
    await pool.end().catch(() => {});
    await records.end().catch(() => {});
    throw error;
  }
}

/** Where an agent reaches the daemon API: SVC_DAEMON_URL, else the configured ingress address. */
function daemonUrl(config: Readonly<ConfigSnapshot>, env: NodeJS.ProcessEnv): string {
  if (env.SVC_DAEMON_URL) return env.SVC_DAEMON_URL;
  const host = env.SVC_HOST || config.server.host;
  const port = env.SVC_PORT || String(config.server.port);
  const reachable = host === "0.0.0.0" || host === "::" || host === "" ? "127.0.0.1" : host;
  return `http://${reachable.includes(":") ? `[${reachable}]` : reachable}:${port}`;
}
