import { listScheduleRecords } from "../../../db/schedules.ts";
import { allSchedules } from "../../../shared/config/schedule.ts";
import { nextFiring } from "../../../shared/schedule-time.ts";
import { ok } from "../context.ts";
import type { Reply, RouteContext } from "../types.ts";

/**
 * The configured schedules (this daemon's configuration) with their next run and their last run
 * as the workers recorded it: `svc schedule list`.
 */
export async function listSchedulesRoute(ctx: RouteContext): Promise<Reply> {
  const records = new Map((await listScheduleRecords(ctx.deps.pool)).map((r) => [r.name, r]));
  const now = new Date();
  const schedules = allSchedules(ctx.deps.config.pipelines).map((schedule) => {
    const record = records.get(schedule.name);
    return {
      name: schedule.name,
      pipeline: schedule.pipeline,
      cron: schedule.cron,
      timezone: schedule.timezone,
      args: schedule.args,
      catchUp: schedule.catchUp,
      nextRun: nextFiring(schedule.cron, schedule.timezone, now).toISOString(),
      lastRun:
        record?.lastRunAt != null
          ? { at: record.lastRunAt.toISOString(), trigger: record.lastTriggerId }
          : null,
    };
  });
  return ok({ schedules });
}
