import { join } from "node:path";
import type pg from "pg";
import type { PgBoss } from "pg-boss";
import { startBoss } from "../db/boss.ts";
import { createAsyncCommitPool, createPool } from "../db/connect.ts";
import { forgetGateway, recordGateway } from "../db/daemon-state.ts";
import { migrate } from "../db/migrate.ts";
import type { ConfigSnapshot } from "../shared/config/types.ts";
import type { Logger } from "../shared/logger.ts";
import { DISPATCH_QUEUE } from "../shared/queues.ts";
import { CredentialCooldowns } from "./credentials/cooldowns.ts";
import { CredentialSecrets } from "./credentials/secrets.ts";
import { Spawner } from "./exec/host/spawner.ts";
import { ModelGateway } from "./gateway/gateway.ts";
import { resolveMetricsToken, startWorkerMetricsServer } from "./metrics.ts";
import { learnAppSlug } from "./outputs/tokens.ts";
import { ensureWorkerQueues } from "./queue/lanes.ts";
import { startSchedules } from "./queue/schedules.ts";

/** What startWorker opened, closed in reverse order on stop or on a failed start. */
export interface Resources {
  pool: pg.Pool;
  records: pg.Pool;
  boss?: PgBoss;
  spawner?: Spawner;
  cancelListener?: { close(): Promise<void> };
  taskCancelListener?: { close(): Promise<void> };
  /** `worker.metrics_port`'s server, and the schedules' pg-boss (worker/queue/schedules.ts) */
  metrics?: { close(): Promise<void> };
  schedules?: { close(): Promise<void> };
  /** the model gateway (worker/gateway/) and the worker whose listener it is, for its row */
  gateway?: { gateway: ModelGateway; worker: string };
}

/**
 * Migrates, then opens what the parts share: the credential state, the model gateway, pg-boss and
 * the lane queues, the metrics server when `worker.metrics_port` is set, the spawner and the
 * schedules. Each is recorded in `opened` as soon as it is open, so a failed start closes exactly
 * what was opened.
 */
export async function openServices(
  options: { config: Readonly<ConfigSnapshot>; logger: Logger; databaseUrl: string },
  opened: Resources,
  env: NodeJS.ProcessEnv,
  heartbeatMs: number,
  workerId: string,
) {
  const { config, logger, databaseUrl } = options;
  const { pool } = opened;
  await migrate(pool);
  const cooldowns = await CredentialCooldowns.load(pool, logger);
  const secrets = await CredentialSecrets.resolve(config, pool, env);
  // comment commands address the App by its slug (GitLab: its user's username) unless
  // codehost.bot_name names another
  const slugFailure = await learnAppSlug(pool, config);
  if (slugFailure)
    logger.warn(
      `the name comment commands address could not be learned; they answer to "@svc": ${slugFailure}`,
      {
        event: "worker.app_slug_unknown",
      },
    );
  // every agent's model calls pass it: the agents hold its tokens, never the credentials
  const gateway = new ModelGateway({
    ...{ db: opened.records, credentials: cooldowns, logger },
    daemonUrl: daemonUrl(config, env),
  });
  opened.gateway = { gateway, worker: workerId };
  const gatewayUrl = await gateway.start(0, "127.0.0.1", join(config.dir, "workspaces"));
  // what `svc doctor` reports of this worker's listener
  await recordGateway(pool, workerId, gatewayUrl);
  logger.info(`model gateway listening at ${gatewayUrl} and, for sandboxes, ${gateway.socketPath}`, {
    ...{ event: "gateway.listening", url: gatewayUrl, socket: gateway.socketPath },
  });
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
  return { cooldowns, secrets, boss, lanes, spawner, gateway };
}

export function openPools(databaseUrl: string, concurrency: number, logger: Logger): Resources {
  const pool = createPool(databaseUrl, { max: concurrency + 4, applicationName: "svc-worker" });
  // the runs' own records commit asynchronously (see RunDeps.records)
  const records = createAsyncCommitPool(databaseUrl, {
    max: concurrency + 1,
    applicationName: "svc-worker-records",
    onLost: (error) =>
      logger.warn("a records connection was lost", {
        event: "worker.records_connection_lost",
        error: error.message,
      }),
  });
  return { pool, records };
}

/** Closes what was opened; `graceful` lets pg-boss finish what it is doing. Failures are logged by no one: the process is ending. */
export async function close(opened: Resources, graceful: boolean): Promise<void> {
  const quietly = (closing: Promise<unknown> | undefined) => closing?.catch(() => {});
  await quietly(opened.cancelListener?.close());
  await quietly(opened.taskCancelListener?.close());
  await quietly(opened.schedules?.close());
  await quietly(opened.metrics?.close());
  await quietly(opened.boss?.stop(graceful ? { graceful: true, timeout: 2_000 } : { graceful: false }));
  await quietly(opened.spawner?.close());
  // after the runs: their agents' tokens are gone with them
  await quietly(opened.gateway?.gateway.close());
  if (opened.gateway) await quietly(forgetGateway(opened.pool, opened.gateway.worker));
  await quietly(opened.pool.end());
  await quietly(opened.records.end());
}

/** Where an agent reaches the daemon API: SVC_DAEMON_URL, else the configured ingress address. */
export function daemonUrl(config: Readonly<ConfigSnapshot>, env: NodeJS.ProcessEnv): string {
  if (env.SVC_DAEMON_URL) return env.SVC_DAEMON_URL;
  const host = env.SVC_HOST || config.server.host;
  const port = env.SVC_PORT || String(config.server.port);
  const reachable = host === "0.0.0.0" || host === "::" || host === "" ? "127.0.0.1" : host;
  return `http://${reachable.includes(":") ? `[${reachable}]` : reachable}:${port}`;
}
