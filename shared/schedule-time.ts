import { type CronExpression, CronExpressionParser } from "cron-parser";

/**
 * When a schedule fires. cron-parser (the library pg-boss's scheduler evaluates with) reads the
 * expression; this module adds the two rules svc promises across daylight-saving changes, because
 * cron-parser alone does not keep them:
 * - a local time that does not exist is skipped: `next()` moves a 02:30 that the spring change skips
 *   to 03:30 (`prev()` skips it), so an instant whose local time the expression does not match is
 *   no firing;
 * - a local time that occurs twice fires once: in the autumn both `prev()` and an hourly `next()`
 *   answer both 02:30s, so the second instance of a repeated local time is no firing.
 * Every consumer (the worker's firing, the catch-up at start, the listing's next run) asks here.
 */

/** Shifts between UTC offsets that time zones make, in minutes (Lord Howe moves by 30). */
const DST_SHIFTS_MINUTES = [30, 60, 120];
/** A bound on the candidates a walk inspects: a valid 5-field expression fires far more often. */
const WALK_LIMIT = 1_000;

/** Why `cron` is not a 5-field cron expression, or undefined when it is one. */
export function cronProblem(cron: string): string | undefined {
  const fields = cron.trim().split(/\s+/);
  if (fields.length !== 5)
    return `has ${fields.length} field${fields.length === 1 ? "" : "s"}; write 5: minute hour day-of-month month day-of-week, e.g. "0 3 * * 1-5"`;
  try {
    CronExpressionParser.parse(cron, { tz: "UTC", strict: false });
    return undefined;
  } catch (error) {
    return `${(error as Error).message}; write 5 fields: minute hour day-of-month month day-of-week, e.g. "0 3 * * 1-5"`;
  }
}

/** Whether `tz` is an IANA time zone that cron-parser (and so pg-boss) can evaluate in. */
export function timezoneKnown(tz: string): boolean {
  try {
    // a reference date forces the zone to be resolved (pg-boss's assertTimezone does the same)
    CronExpressionParser.parse("* * * * *", { tz, strict: false, currentDate: new Date() });
    new Intl.DateTimeFormat("en-US", { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

function expression(cron: string, tz: string, currentDate: Date): CronExpression {
  return CronExpressionParser.parse(cron, { tz, strict: false, currentDate });
}

const wallFormats = new Map<string, Intl.DateTimeFormat>();

/** The local date and time of `instant` in `tz`, to the minute. */
export function wallClock(instant: Date, tz: string): string {
  let format = wallFormats.get(tz);
  if (!format) {
    format = new Intl.DateTimeFormat("sv-SE", {
      timeZone: tz,
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      hourCycle: "h23",
    });
    wallFormats.set(tz, format);
  }
  return format.format(instant);
}

/** Whether the schedule fires at `instant` (an instant cron-parser produced for it). */
export function firesAt(cron: string, tz: string, instant: Date): boolean {
  if (!expression(cron, tz, instant).includesDate(instant)) return false;
  const local = wallClock(instant, tz);
  return !DST_SHIFTS_MINUTES.some(
    (minutes) => wallClock(new Date(instant.getTime() - minutes * 60_000), tz) === local,
  );
}

/** The first firing strictly after `after`. */
export function nextFiring(cron: string, tz: string, after: Date): Date {
  const walk = expression(cron, tz, after);
  for (let i = 0; i < WALK_LIMIT; i++) {
    const candidate = walk.next().toDate();
    if (firesAt(cron, tz, candidate)) return candidate;
  }
  throw new Error(`no firing of "${cron}" (${tz}) found after ${after.toISOString()}`);
}

/** The latest firing at or before `until` and strictly after `after`, or null when there is none. */
export function latestFiring(cron: string, tz: string, until: Date, after: Date): Date | null {
  // prev() answers strictly before its reference date: one millisecond past `until` includes it
  const walk = expression(cron, tz, new Date(until.getTime() + 1));
  for (let i = 0; i < WALK_LIMIT; i++) {
    const candidate = walk.prev().toDate();
    if (candidate.getTime() <= after.getTime()) return null;
    if (firesAt(cron, tz, candidate)) return candidate;
  }
  return null;
}
