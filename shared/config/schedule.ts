import { argProblems } from "../pipeline-args.ts";
import { cronProblem, timezoneKnown } from "../schedule-time.ts";
import { bool, checkKeys, describe, mapping, quote, str, type YamlMap } from "./read.ts";
import type { ConfigFile } from "./source.ts";
import type { Pipeline, PipelineArg, Schedule } from "./types.ts";

/** The characters pg-boss accepts in a schedule key (its assertObjectName, less `/`). */
const SCHEDULE_NAME = /^[A-Za-z0-9_.-]+$/;

/** `<pipeline>` for the first entry, `<pipeline>-2`, `-3` … for the ones after it. */
export function scheduleName(pipeline: string, index: number): string {
  return index === 0 ? pipeline : `${pipeline}-${index + 1}`;
}

/**
 * `trigger.schedule`: a list of `{ cron, timezone?, args?, catch_up? }`. The cron expression has 5
 * fields, the time zone is an IANA name (default UTC) and `args` must pass the pipeline's `args`
 * declaration exactly as a fire's args would.
 */
export function readSchedules(
  f: ConfigFile,
  trigger: YamlMap,
  pipeline: string,
  declared: Readonly<Record<string, PipelineArg>>,
): Schedule[] {
  const value = trigger.schedule;
  if (value === undefined || value === null) return [];
  const path = ["trigger", "schedule"];
  if (!Array.isArray(value)) {
    f.report(
      path,
      "invalid_type",
      `"trigger.schedule" must be a list of { cron, timezone?, args?, catch_up? }, not ${describe(value)} - e.g. schedule: [{ cron: "0 3 * * *", timezone: Europe/Berlin }]`,
    );
    return [];
  }
  const schedules: Schedule[] = [];
  value.forEach((item, index) => {
    const itemPath = [...path, index];
    const entry = mapping(f, item, itemPath, ' such as { cron: "0 3 * * *", timezone: Europe/Berlin }');
    if (!entry) return;
    checkKeys(f, entry, itemPath, ["cron", "timezone", "args", "catch_up"]);
    const before = f.errorCount;
    const name = scheduleName(pipeline, index);
    if (!SCHEDULE_NAME.test(name))
      f.report(
        itemPath,
        "invalid_value",
        `schedule name ${quote(name)} (from the file name) may hold only letters, digits, "_", "." and "-" - rename the pipeline file`,
      );
    const cron = str(f, entry, "cron", itemPath, {
      required: true,
      hint: ' - a 5-field cron expression, e.g. cron: "0 3 * * *"',
    });
    const problem = cron === undefined ? undefined : cronProblem(cron);
    if (problem)
      f.report(
        [...itemPath, "cron"],
        "invalid_value",
        `"trigger.schedule[${index}].cron" ${quote(cron)} is not a valid cron expression: ${problem}`,
      );
    const timezone = str(f, entry, "timezone", itemPath) ?? "UTC";
    if (!timezoneKnown(timezone))
      f.report(
        [...itemPath, "timezone"],
        "invalid_value",
        `"trigger.schedule[${index}].timezone" ${quote(timezone)} is not a known time zone - write an IANA name such as Europe/Berlin or America/New_York (default UTC)`,
      );
    const args = readScheduleArgs(f, entry, itemPath, pipeline, declared);
    const catchUp = bool(f, entry, "catch_up", itemPath) ?? false;
    if (f.errorCount > before || cron === undefined || args === undefined) return;
    schedules.push({ name, pipeline, cron: cron.trim(), timezone, args, catchUp });
  });
  return schedules;
}

function readScheduleArgs(
  f: ConfigFile,
  entry: YamlMap,
  itemPath: (string | number)[],
  pipeline: string,
  declared: Readonly<Record<string, PipelineArg>>,
): Schedule["args"] | undefined {
  const raw = entry.args == null ? {} : mapping(f, entry.args, [...itemPath, "args"], " of name to value");
  if (!raw) return undefined;
  const { accepted, problems } = argProblems(pipeline, declared, raw);
  for (const problem of problems) {
    const at = problem.name in raw ? [...itemPath, "args", problem.name] : [...itemPath, "args"];
    f.report(
      at,
      "invalid_value",
      `schedule args refused by the pipeline's "args" declaration: ${problem.message} - give each declared arg a value of its type, or declare it under "args"`,
    );
  }
  return problems.length ? undefined : accepted;
}

/** Two pipelines whose schedules end up with one name (`a` with two entries, and a pipeline `a-2`). */
export function reportDuplicateScheduleNames(
  pipelines: readonly { f: ConfigFile; schedules: readonly Schedule[] }[],
): void {
  const seen = new Map<string, string>();
  // the first in name order keeps the name: `a` before `a-2`
  const stem = (file: string) => file.replace(/\.yaml$/, "");
  const byFile = [...pipelines].sort((a, b) => (stem(a.f.file) < stem(b.f.file) ? -1 : 1));
  for (const { f, schedules } of byFile) {
    for (const schedule of schedules) {
      const first = seen.get(schedule.name);
      if (first === undefined) {
        seen.set(schedule.name, schedule.pipeline);
        continue;
      }
      f.report(
        ["trigger", "schedule"],
        "duplicate_name",
        `schedule name ${quote(schedule.name)} is also the name of a schedule of pipeline ${quote(first)} - rename one of the pipeline files`,
      );
    }
  }
}

/** Every configured schedule, by name. */
export function allSchedules(pipelines: Readonly<Record<string, Pipeline>>): Schedule[] {
  return Object.values(pipelines)
    .flatMap((pipeline) => pipeline.trigger?.schedule ?? [])
    .sort((a, b) => a.name.localeCompare(b.name));
}

export function findSchedule(
  pipelines: Readonly<Record<string, Pipeline>>,
  name: string,
): Schedule | undefined {
  return allSchedules(pipelines).find((schedule) => schedule.name === name);
}
