import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import pg from "pg";
import type { PgBoss } from "pg-boss";
import { startBoss } from "../db/boss.ts";
import { createPool } from "../db/connect.ts";
import { CANCEL_CHANNEL } from "../db/invocations.ts";
import { migrate } from "../db/migrate.ts";
import { TASK_CANCEL_CHANNEL } from "../db/orchestrated-tasks.ts";
import { DEFAULT_HEARTBEAT_MS } from "../shared/config/daemon/worker.ts";
import type { ConfigSnapshot } from "../shared/config/types.ts";
import { openKnowledgeForRole } from "../shared/knowledge/boot.ts";
import type { Logger } from "../shared/logger.ts";
import { DISPATCH_QUEUE } from "../shared/queues.ts";
import { unsandboxedPipelines } from "../shared/sandbox/settings.ts";
import { CredentialCooldowns } from "./credentials/cooldowns.ts";
import { CoolingProbe } from "./credentials/probe.ts";
import { CredentialSecrets } from "./credentials/secrets.ts";
import { Spawner } from "./exec/host/spawner.ts";
import { resolveMetricsToken, startWorkerMetricsServer } from "./metrics.ts";
import { ClaimLoop } from "./queue/claim-loop.ts";
import { DrainSwitch } from "./queue/drain-switch.ts";
import { ensureWorkerQueues, LaneStates } from "./queue/lanes.ts";
import { leaseSeconds as leaseSecondsFor } from "./queue/run-leases.ts";
import { startSchedules } from "./queue/schedules.ts";
import { Slots } from "./queue/slots.ts";
import { startSweeper } from "./queue/sweeper.ts";
import { type ExecuteDeps, type RunHandle, runClaimedInvocation } from "./run/lifecycle.ts";
import { runClaimedTask, type TaskHandle } from "./tasks/claimed-task.ts";

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

/** What startWorker opened, closed in reverse order on stop or on a failed start. */
interface Resources {
  pool: pg.Pool;
  records: pg.Pool;
  boss?: PgBoss;
  spawner?: Spawner;
  cancelListener?: { close(): Promise<void> };
  taskCancelListener?: { close(): Promise<void> };
  /** `worker.metrics_port`'s server, and the schedules' pg-boss (worker/queue/schedules.ts) */
  metrics?: { close(): Promise<void> };
  schedules?: { close(): Promise<void> };
}

/**
 * `svc worker`: wires the worker's parts (docs/architecture.md draws them):
 * - the claim loop (claim-loop.ts) fetches jobs for free slots (slots.ts) and dispatches triggers
 *   (dispatch.ts) into runs;
 * - each run (execute-invocation.ts) goes workspace → setup steps → agent → result check, its
 *   children started by the spawner (spawner.ts), which kills them if this process dies;
 * - the sweeper (sweeper.ts) reaps lost runs, reads the drain switch, probes credentials, and
 *   applies retention.
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
    const { cooldowns, secrets, boss, lanes, spawner } = await openServices(
      options,
      opened,
      env,
      heartbeatMs,
    );
    const shutdown = new AbortController();
    const runs = new Map<string, RunHandle>();
    // the orchestrated tasks this worker runs, by task id (worker/tasks/claimed-task.ts)
    const tasks = new Map<string, TaskHandle>();
    const deps: ExecuteDeps = {
      ...{ pool, records, boss, config, cooldowns, secrets, logger, spawner, runs },
      workerId: id,
      heartbeatMs,
      staleAfterMs,
      daemonUrl: daemonUrl(config, env),
      knowledge,
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
    // a cancelled invocation stops its run here and every task of it this worker holds
    opened.cancelListener = await boss.getDb().listen?.(
      CANCEL_CHANNEL,
      (invocation) => {
        runs.get(invocation)?.cancel();
        for (const task of tasks.values()) if (task.invocationId === invocation) task.cancel();
      },
      () => {},
    );
    opened.taskCancelListener = await boss.getDb().listen?.(
      TASK_CANCEL_CHANNEL,
      (task) => tasks.get(task)?.cancel(),
      () => {},
    );
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
 * Migrates, then opens what the parts share: the credential state, pg-boss and the lane queues, the
 * metrics server when `worker.metrics_port` is set, the spawner and the schedules. Each is recorded
 * in `opened` as soon as it is open, so a failed start closes exactly what was opened.
 */
async function openServices(
  options: WorkerOptions,
  opened: Resources,
  env: NodeJS.ProcessEnv,
  heartbeatMs: number,
) {
  const { config, logger, databaseUrl } = options;
  const { pool } = opened;
  await migrate(pool);
  const cooldowns = await CredentialCooldowns.load(pool, logger);
  const secrets = await CredentialSecrets.resolve(config, pool, env);
  // pg-boss's supervisor fails leases that missed their heartbeats: it looks once per heartbeat
  const monitorIntervalSeconds = Math.max(1, Math.round(heartbeatMs / 1000));
  const boss = await startBoss({ url: databaseUrl, max: 4, logger, monitorIntervalSeconds });
  opened.boss = boss;
  const lanes = await ensureWorkerQueues(boss, config);
  if (config.worker.metricsPort !== undefined) {
    const token = await resolveMetricsToken(config, pool, env);
    const watched = [DISPATCH_QUEUE, ...lanes.keys()];
    opened.metrics = await startWorkerMetricsServer({ config, pool, boss, lanes: watched, logger, token });
  }
  const spawner = await Spawner.start();
  opened.spawner = spawner;
  opened.schedules = await startSchedules({ config, databaseUrl, pool, boss, logger, env });
  return { cooldowns, secrets, boss, lanes, spawner };
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

function openPools(databaseUrl: string, concurrency: number, logger: Logger): Resources {
  const pool = createPool(databaseUrl, { max: concurrency + 4, applicationName: "svc-worker" });
  // the runs' own records commit asynchronously (see ExecuteDeps.records)
  const records = new pg.Pool({
    connectionString: databaseUrl,
    max: concurrency + 1,
    application_name: "svc-worker-records",
    options: "-c synchronous_commit=off",
    connectionTimeoutMillis: 5_000,
    query_timeout: 30_000,
  });
  // an idle client's lost connection: the pool drops it, and the next query reports the failure
  records.on("error", (error) =>
    logger.warn("a records connection was lost", {
      event: "worker.records_connection_lost",
      error: error.message,
    }),
  );
  return { pool, records };
}

/** Closes what was opened; `graceful` lets pg-boss finish what it is doing. Failures are logged by no one: the process is ending. */
async function close(opened: Resources, graceful: boolean): Promise<void> {
  const quietly = (closing: Promise<unknown> | undefined) => closing?.catch(() => {});
  await quietly(opened.cancelListener?.close());
  await quietly(opened.taskCancelListener?.close());
  await quietly(opened.schedules?.close());
  await quietly(opened.metrics?.close());
  await quietly(opened.boss?.stop(graceful ? { graceful: true, timeout: 2_000 } : { graceful: false }));
  await quietly(opened.spawner?.close());
  await quietly(opened.pool.end());
  await quietly(opened.records.end());
}

/** Where an agent reaches the daemon API: SVC_DAEMON_URL, else the configured ingress address. */
function daemonUrl(config: Readonly<ConfigSnapshot>, env: NodeJS.ProcessEnv): string {
  if (env.SVC_DAEMON_URL) return env.SVC_DAEMON_URL;
  const host = env.SVC_HOST || config.server.host;
  const port = env.SVC_PORT || String(config.server.port);
  const reachable = host === "0.0.0.0" || host === "::" || host === "" ? "127.0.0.1" : host;
  return `http://${reachable.includes(":") ? `[${reachable}]` : reachable}:${port}`;
}
