import { Command } from "@oclif/core";
import { fromDaemon } from "../../from-daemon.ts";
import { tableLines } from "../../table.ts";

interface ScheduleRow {
  name: string;
  pipeline: string;
  cron: string;
  timezone: string;
  args: Record<string, unknown>;
  catchUp: boolean;
  nextRun: string;
  lastRun: { at: string; trigger: string | null } | null;
}
interface ListAnswer {
  schedules: ScheduleRow[];
}

const COLUMNS = ["NAME", "PIPELINE", "CRON", "TIMEZONE", "NEXT RUN", "LAST RUN", "TRIGGER"] as const;

export default class ScheduleList extends Command {
  static override summary = "List the configured schedules with their next and last run";
  static override description =
    "Lists every schedule of the daemon's configuration (GET /schedules): its name (`<pipeline>`, then " +
    "`<pipeline>-2` … for further `trigger.schedule` entries), pipeline, cron expression, time zone, the next " +
    "run and the last run with the trigger it recorded. Times are UTC (ISO 8601). Needs `triggers:read`.";
  static override examples = ["<%= config.bin %> schedule list", "<%= config.bin %> schedule list --json"];
  static override enableJsonFlag = true;

  async run(): Promise<ListAnswer> {
    await this.parse(ScheduleList);
    const answer: ListAnswer = await fromDaemon(this, (client) => client.get<ListAnswer>("/schedules"));
    if (!this.jsonEnabled()) {
      if (!answer.schedules.length) {
        this.log("no schedules configured (add trigger.schedule to a pipeline)");
        return answer;
      }
      const rows = answer.schedules.map((s) => [
        s.name,
        s.pipeline,
        s.cron,
        s.timezone,
        s.nextRun,
        s.lastRun?.at ?? "-",
        s.lastRun?.trigger ?? "-",
      ]);
      for (const line of tableLines(COLUMNS, rows)) this.log(line);
    }
    return answer;
  }
}
