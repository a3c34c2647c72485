import type pg from "pg";
import type { PgBoss } from "pg-boss";
import type { Schedule } from "../shared/config/types.ts";
import type { Queryable } from "./queryable.ts";
import { recordTrigger } from "./record-trigger.ts";

/** Queries of `svc.schedules`, and the one way a schedule fires: a trigger plus its dispatch job. */

export interface ScheduleRecord {
  name: string;
  pipeline: string;
  cron: string;
  timezone: string;
  registeredAt: Date;
  lastScheduledFor: Date | null;
  lastRunAt: Date | null;
  lastTriggerId: string | null;
}

const COLUMNS = `name, pipeline, cron, timezone, registered_at AS "registeredAt",
  last_scheduled_for AS "lastScheduledFor", last_run_at AS "lastRunAt", last_trigger_id AS "lastTriggerId"`;

/**
 * Records the configured schedules and forgets the others. A schedule whose cron or time zone
 * changed starts afresh: it owes no tick from before the change.
 */
export async function registerSchedules(db: Queryable, schedules: readonly Schedule[]): Promise<void> {
  await db.query(
    `INSERT INTO svc.schedules (name, pipeline, cron, timezone)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[])
     ON CONFLICT (name) DO UPDATE SET
       pipeline = EXCLUDED.pipeline,
       cron = EXCLUDED.cron,
       timezone = EXCLUDED.timezone,
       registered_at = CASE WHEN (svc.schedules.cron, svc.schedules.timezone) = (EXCLUDED.cron, EXCLUDED.timezone)
         THEN svc.schedules.registered_at ELSE now() END,
       last_scheduled_for = CASE WHEN (svc.schedules.cron, svc.schedules.timezone) = (EXCLUDED.cron, EXCLUDED.timezone)
         THEN svc.schedules.last_scheduled_for END`,
    [
      schedules.map((s) => s.name),
      schedules.map((s) => s.pipeline),
      schedules.map((s) => s.cron),
      schedules.map((s) => s.timezone),
    ],
  );
  await db.query("DELETE FROM svc.schedules WHERE NOT (name = ANY($1::text[]))", [
    schedules.map((s) => s.name),
  ]);
}

export async function listScheduleRecords(db: Queryable): Promise<ScheduleRecord[]> {
  const { rows } = await db.query<ScheduleRecord>(`SELECT ${COLUMNS} FROM svc.schedules ORDER BY name`);
  return rows;
}

export async function getScheduleRecord(db: Queryable, name: string): Promise<ScheduleRecord | undefined> {
  const { rows } = await db.query<ScheduleRecord>(`SELECT ${COLUMNS} FROM svc.schedules WHERE name = $1`, [
    name,
  ]);
  return rows[0];
}

/** A tick of the schedule (`scheduledFor` its instant), or a run-now (`runNow`, at `scheduledFor`). */
export interface Firing {
  scheduledFor: Date;
  runNow?: boolean;
}

/**
 * Fires `schedule`: a trigger of kind `schedule` (event `schedule`, source the schedule's name,
 * payload `{ schedule, cron, scheduled_for, args }`) and its dispatch job, in one transaction. A
 * tick's delivery id is its instant, so however many workers fire the same tick, the triggers'
 * (source, delivery_id) index keeps exactly one; `created` is false for the ones that lost. A
 * run-now has no delivery id: each is its own firing.
 */
export async function fireSchedule(
  pool: pg.Pool,
  boss: PgBoss,
  schedule: Schedule,
  firing: Firing,
  owner: string | null = null,
): Promise<{ id: string; created: boolean }> {
  const scheduledFor = firing.scheduledFor.toISOString();
  const fired = await recordTrigger(pool, boss, {
    kind: "schedule",
    source: schedule.name,
    eventName: "schedule",
    deliveryId: firing.runNow ? null : scheduledFor,
    payloadJson: JSON.stringify({
      schedule: schedule.name,
      cron: schedule.cron,
      scheduled_for: scheduledFor,
      args: schedule.args,
    }),
    owner,
  });
  if (fired.created) await noteRun(pool, schedule, fired.id, firing.runNow ? null : firing.scheduledFor);
  return fired;
}

/** The listing's record of the latest run; best kept, since the trigger itself is already stored. */
async function noteRun(db: Queryable, schedule: Schedule, triggerId: string, tick: Date | null) {
  await db.query(
    `INSERT INTO svc.schedules AS s (name, pipeline, cron, timezone, last_scheduled_for, last_run_at, last_trigger_id)
       VALUES ($1, $2, $3, $4, $5, now(), $6)
     ON CONFLICT (name) DO UPDATE SET
       last_scheduled_for = GREATEST(s.last_scheduled_for, EXCLUDED.last_scheduled_for),
       last_run_at = now(),
       last_trigger_id = EXCLUDED.last_trigger_id`,
    [schedule.name, schedule.pipeline, schedule.cron, schedule.timezone, tick, triggerId],
  );
}
