import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { DEFAULT_HEARTBEAT_MS } from "../shared/config/daemon/worker.ts";
import type { ConfigSnapshot } from "../shared/config/types.ts";
import { openKnowledgeForRole } from "../shared/knowledge/boot.ts";
import type { Logger } from "../shared/logger.ts";
import { unsandboxedPipelines } from "../shared/sandbox/settings.ts";
import { listenForCancellations } from "./cancellations.ts";
import { CoolingProbe } from "./credentials/probe.ts";
import { HostEngine } from "./exec/host/engine.ts";
import { ClaimLoop } from "./queue/claim-loop.ts";
import { DrainSwitch } from "./queue/drain-switch.ts";
import { LaneStates } from "./queue/lanes.ts";
import { leaseSeconds as leaseSecondsFor } from "./queue/run-leases.ts";
import { Slots } from "./queue/slots.ts";
import { startSweeper } from "./queue/sweeper.ts";
import { type HoldDeps, type RunHandle, runClaimedInvocation } from "./run/lifecycle.ts";
import { close, daemonUrl, openPools, openServices, type Resources } from "./services.ts";
import { runClaimedTask, type TaskHandle } from "./tasks/claim.ts";

export interface WorkerOptions {
  config: Readonly<ConfigSnapshot>;
  databaseUrl: string;
  logger: Logger;
  env?: NodeJS.ProcessEnv;
  /** how often a running invocation proves its worker alive */
  heartbeatMs?: number;
  /** a running invocation without a heartbeat for this long belongs to a lost worker */
  staleAfterMs?: number;
  /** the heartbeatSeconds of run leases; default MISSED_HEARTBEATS heartbeats (worker/queue/run-leases.ts) */
  leaseSeconds?: number;
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

/**
 * `svc worker`: wires the worker's rooms, in the order a run takes them (docs/architecture.md):
 * - queue/: the claim loop fetches jobs for free slots and dispatches triggers into runs; the
 *   sweeper reaps lost runs, reads the drain switch, probes credentials and applies retention;
 * - event/: what a trigger means and which pipelines it fires;
 * - run/: one invocation's life (lifecycle.ts holds it, phases.ts runs it), tasks/ an orchestrated
 *   task's; both start their processes on an engine of exec/: the host, through the spawner that
 *   kills them if this process dies, or the run's own container.
 */
export async function startWorker(options: WorkerOptions): Promise<RunningWorker> {
  const { config, logger } = options;
  const env = options.env ?? process.env;
  const id = `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
  const heartbeatMs = options.heartbeatMs ?? config.worker.heartbeatMs ?? DEFAULT_HEARTBEAT_MS;
  const leaseSeconds = options.leaseSeconds ?? leaseSecondsFor(heartbeatMs);
  // the backstop for a run without a lease (claimed before leases existed): well past the lease's bound
  const staleAfterMs = options.staleAfterMs ?? Math.max(leaseSeconds * 2_000, 30_000);
  const concurrency = Math.max(1, config.worker.concurrency);
  // knowledge sources found → qmd at its floor and a current index, or no start
  const knowledge = await openKnowledgeForRole(config, logger);
  const opened = openPools(options.databaseUrl, concurrency, logger);
  try {
    const { pool, records } = opened;
    const { cooldowns, secrets, boss, lanes, spawner, gateway } = await openServices(
      options,
      opened,
      env,
      heartbeatMs,
      id,
    );
    const shutdown = new AbortController();
    const runs = new Map<string, RunHandle>();
    // the orchestrated tasks this worker runs, by task id (worker/tasks/claim.ts)
    const tasks = new Map<string, TaskHandle>();
    const deps: HoldDeps = {
      ...{
        pool,
        records,
        boss,
        config,
        cooldowns,
        secrets,
        logger,
        runs,
        heartbeatMs,
        staleAfterMs,
        knowledge,
        gateway,
      },
      ...{ workerId: id, host: new HostEngine(spawner), daemonUrl: daemonUrl(config, env) },
    };
    const slots = new Slots(concurrency, () => loop.slotFreed());
    const drain = new DrainSwitch(pool, logger, () => loop.poke());
    const loop = new ClaimLoop({
      ...{ pool, boss, config, cooldowns, secrets, logger, lanes, slots, staleAfterMs, leaseSeconds },
      workerId: id,
      drained: () => drain.drained,
      runClaimed: (row, known, lease) => runClaimedInvocation(deps, row, shutdown.signal, known, lease),
      runClaimedTask: (task) => runClaimedTask(deps, tasks, task, shutdown.signal),
    });
    await listenForCancellations(boss, runs, tasks, opened);
    await drain.read();
    const laneStates = new LaneStates(lanes, { config, cooldowns, secrets, logger });
    laneStates.update();
    cooldowns.onChange(() => {
      laneStates.update();
      loop.poke();
    });
    await loop.start();
    const probeIntervalMs = options.probeIntervalMs ?? 15_000;
    const stopSweeper = startSweeper({
      ...{ pool, boss, config, cooldowns, secrets, logger, staleAfterMs, drain, probeIntervalMs },
      maxAttempts: options.maxAttempts ?? 3,
      probe: new CoolingProbe({ config, cooldowns, secrets, logger, intervalMs: probeIntervalMs }),
      // lost leases are taken back once per heartbeat, so a lost run waits at most one more
      reapIntervalMs: options.reapIntervalMs ?? Math.max(1_000, Math.min(heartbeatMs, staleAfterMs / 3)),
      sweepIntervalMs: options.sweepIntervalMs ?? 3_600_000,
    });
    logger.info("worker started", {
      event: "worker.started",
      worker: id,
      concurrency,
      lanes: laneStates.usable(),
      spawner: spawner.pid,
      gateway: gateway.url,
    });
    const onHost = unsandboxedPipelines(config);
    if (onHost.length > 0)
      logger.warn(
        `pipelines without sandbox run on this host as the worker's user, with its files and network: ${onHost.join(", ")}`,
        { event: "worker.unsandboxed_pipelines", pipelines: onHost },
      );

    let stopping: Promise<void> | undefined;
    const parts = { id, logger, slots, loop, stopSweeper, shutdown, opened };
    return {
      id,
      stop(graceMs = config.worker.graceMs) {
        stopping ??= stopWorker(parts, graceMs);
        return stopping;
      },
    };
  } catch (error) {
    await close(opened, false);
    throw error;
  }
}

/**
 * Stops in order: the sweeper and the claim loop (nothing new is claimed), the running work gets up
 * to `graceMs` to finish, then it is killed and released for retry, then everything is closed.
 */
async function stopWorker(
  parts: {
    id: string;
    logger: Logger;
    slots: Slots;
    loop: ClaimLoop;
    stopSweeper: () => void;
    shutdown: AbortController;
    opened: Resources;
  },
  graceMs: number,
): Promise<void> {
  const { id, logger, slots } = parts;
  logger.info("worker stopping", { event: "worker.stopping", worker: id, running: slots.running, graceMs });
  parts.stopSweeper();
  await parts.loop.stop();
  await slots.idleWithin(graceMs);
  // past the grace period: kill what still runs and hand it back to the queue
  parts.shutdown.abort();
  await slots.idle();
  await close(parts.opened, true);
  logger.info("worker stopped", { event: "worker.stopped", worker: id });
}
