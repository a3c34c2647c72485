import type pg from "pg";
import type { JobWithMetadata, PgBoss } from "pg-boss";
import { ensureQueue, startBoss } from "../../db/boss.ts";
import { fireSchedule, getScheduleRecord, registerSchedules } from "../../db/schedules.ts";
import { allSchedules, findSchedule } from "../../shared/config/schedule.ts";
import type { ConfigSnapshot, Schedule } from "../../shared/config/types.ts";
import type { Logger } from "../../shared/logger.ts";
import { latestFiring } from "../../shared/schedule-time.ts";

/**
 * `trigger.schedule` on pg-boss's scheduler. Every worker registers the configured schedules with
 * `boss.schedule` (and `unschedule`s the ones no longer configured); pg-boss's cron pass, run by
 * one instance at a time, sends one job per due occurrence to SCHEDULE_QUEUE. The job carries only
 * the schedule's name, so the worker that takes it works out which tick it stands for: the latest
 * firing at or before the job's creation (within TICK_WINDOW_MS). The tick then fires through
 * `fireSchedule`, whose delivery id is the tick's instant: a tick fires exactly once however many
 * jobs or workers reach it. See docs/worker.md ("Schedules").
 */
export const SCHEDULE_QUEUE = "svc-schedule";

/**
 * How far before a job's creation its tick may lie: pg-boss sends an occurrence while it is less
 * than 60 s old, on a pass every check interval (at most 45 s), through its send-it queue (polled
 * every few seconds). Older ticks were missed, and are not replayed.
 */
const TICK_WINDOW_MS = 90_000;

/** A job is retried by another worker if this one fails to fire it (or does not know its schedule). */
const QUEUE_OPTIONS = { retryLimit: 3, expireInSeconds: 300, notify: false };

export interface ScheduleOptions {
  config: Readonly<ConfigSnapshot>;
  databaseUrl: string;
  pool: pg.Pool;
  /** the worker's pg-boss instance, enough when no schedule is configured */
  boss: PgBoss;
  logger: Logger;
  env?: NodeJS.ProcessEnv;
}

/** `close()` stops firing (the worker closes it with its listeners). */
export interface RunningSchedules {
  close(): Promise<void>;
}

/** pg-boss's cron check interval: SVC_SCHEDULE_CHECK_SECONDS (1-45), pg-boss's 30 by default. */
export function checkIntervalSeconds(env: NodeJS.ProcessEnv): number | undefined {
  const raw = env.SVC_SCHEDULE_CHECK_SECONDS;
  if (raw === undefined || raw === "") return undefined;
  const seconds = Number(raw);
  if (!Number.isInteger(seconds) || seconds < 1 || seconds > 45)
    throw new Error(
      `SVC_SCHEDULE_CHECK_SECONDS must be a whole number of seconds from 1 to 45 (got "${raw}")`,
    );
  return seconds;
}

/**
 * Starts firing the configured schedules on a pg-boss instance of its own (the scheduler must be
 * switched on when pg-boss is constructed, and the worker's claim loop runs no pg-boss fetchers).
 * With none configured it only unschedules old ones, through the worker's own `boss`.
 */
export async function startSchedules(options: ScheduleOptions): Promise<RunningSchedules> {
  const { config, pool, logger } = options;
  const schedules = allSchedules(config.pipelines);
  const cronMonitorIntervalSeconds = checkIntervalSeconds(options.env ?? process.env);
  await registerSchedules(pool, schedules);
  if (schedules.length === 0) {
    await ensureQueue(options.boss, SCHEDULE_QUEUE, QUEUE_OPTIONS);
    await syncBossSchedules(options.boss, schedules);
    return { close: async () => {} };
  }
  const boss = await startBoss({
    url: options.databaseUrl,
    max: 2,
    supervise: false,
    schedule: true,
    ...(cronMonitorIntervalSeconds ? { cronMonitorIntervalSeconds } : {}),
  });
  try {
    await ensureQueue(boss, SCHEDULE_QUEUE, QUEUE_OPTIONS);
    await syncBossSchedules(boss, schedules);
    for (const schedule of schedules) if (schedule.catchUp) await catchUp(pool, boss, schedule, logger);
    await boss.work(
      SCHEDULE_QUEUE,
      { includeMetadata: true, batchSize: 1, pollingIntervalSeconds: 1 },
      async (jobs: JobWithMetadata<{ schedule: string }>[]) => {
        for (const job of jobs) await fireTick(pool, boss, config, logger, job.data.schedule, job.createdOn);
      },
    );
    logger.info("schedules registered", {
      event: "schedules.started",
      schedules: schedules.map((s) => s.name),
    });
  } catch (error) {
    await boss.stop({ graceful: false }).catch(() => {});
    throw error;
  }
  return {
    async close() {
      await boss.stop({ graceful: true, timeout: 2_000 });
    },
  };
}

/** Makes pg-boss's schedules of SCHEDULE_QUEUE exactly the configured ones (keyed by name). */
async function syncBossSchedules(boss: PgBoss, schedules: readonly Schedule[]): Promise<void> {
  const configured = new Set(schedules.map((s) => s.name));
  for (const existing of await boss.getSchedules(SCHEDULE_QUEUE))
    if (!configured.has(existing.key)) await boss.unschedule(SCHEDULE_QUEUE, existing.key);
  for (const schedule of schedules)
    await boss.schedule(
      SCHEDULE_QUEUE,
      schedule.cron,
      { schedule: schedule.name },
      { tz: schedule.timezone, key: schedule.name, retryLimit: 3, expireInSeconds: 300 },
    );
}

/**
 * Fires the tick a job of `name` created at `createdOn` stands for. Normally that is the latest
 * firing at or before `createdOn`; when another job already fired it (a slow pass can put two
 * ticks' jobs after the second tick), the one before it, still within TICK_WINDOW_MS.
 */
async function fireTick(
  pool: pg.Pool,
  boss: PgBoss,
  config: Readonly<ConfigSnapshot>,
  logger: Logger,
  name: string,
  createdOn: Date,
): Promise<void> {
  const schedule = findSchedule(config.pipelines, name);
  if (!schedule) {
    // a worker started with another configuration registered it: fail the job, so that a worker
    // that knows the schedule retries it (a schedule no worker knows is unscheduled at their start)
    logger.warn("schedule job for a schedule this worker does not know; left for another worker", {
      event: "schedule.unknown",
      schedule: name,
    });
    throw new Error(`schedule "${name}" is not in this worker's configuration`);
  }
  const earliest = new Date(createdOn.getTime() - TICK_WINDOW_MS);
  let until = createdOn;
  for (;;) {
    const tick = latestFiring(schedule.cron, schedule.timezone, until, earliest);
    if (!tick) {
      logger.debug("schedule job found no tick left to fire", { event: "schedule.no_tick", schedule: name });
      return;
    }
    const fired = await fireSchedule(pool, boss, schedule, { scheduledFor: tick });
    if (fired.created) {
      logger.info("schedule fired", {
        event: "schedule.fired",
        schedule: name,
        scheduled_for: tick.toISOString(),
        trigger: fired.id,
      });
      return;
    }
    until = new Date(tick.getTime() - 1);
  }
}

/**
 * `catch_up: true`: the most recent tick since the schedule was registered (and since its last
 * tick) fires at start if nothing fired it, i.e. it came due while every worker was down. Older
 * missed ticks are not replayed. A tick pg-boss is about to send as well fires once all the same.
 */
async function catchUp(pool: pg.Pool, boss: PgBoss, schedule: Schedule, logger: Logger): Promise<void> {
  const record = await getScheduleRecord(pool, schedule.name);
  if (!record) return;
  const since = Math.max(record.registeredAt.getTime(), record.lastScheduledFor?.getTime() ?? 0);
  const tick = latestFiring(schedule.cron, schedule.timezone, new Date(), new Date(since));
  if (!tick) return;
  const fired = await fireSchedule(pool, boss, schedule, { scheduledFor: tick });
  if (fired.created)
    logger.info("schedule caught up on its most recent missed tick", {
      event: "schedule.caught_up",
      schedule: schedule.name,
      scheduled_for: tick.toISOString(),
      trigger: fired.id,
    });
}
