import { Command, Flags } from "@oclif/core";
import { fromDaemon } from "../../from-daemon.ts";
import { sinceFlag, statusFlag } from "../../trigger-flags.ts";

interface StatsAnswer {
  by: string;
  total: number;
  groups: Record<string, string | number | null>[];
}

export default class TriggerStats extends Command {
  static override summary = "Break triggers down by diagnostic code, source or kind";
  static override description =
    "Counts the triggers matching a status (default error) grouped by --by (default code), from GET " +
    "/triggers/stats. `svc trigger stats --status error --by code` shows which failures dominate. Needs `triggers:read`.";
  static override examples = [
    "<%= config.bin %> trigger stats --status error --by code",
    "<%= config.bin %> trigger stats --status discarded --by source --since 7d",
    "<%= config.bin %> trigger stats --json",
  ];
  static override enableJsonFlag = true;
  static override flags = {
    status: statusFlag("count triggers with this status", "error"),
    by: Flags.string({ description: "group by", options: ["code", "source", "kind"], default: "code" }),
    since: sinceFlag,
  };

  async run(): Promise<StatsAnswer> {
    const { flags } = await this.parse(TriggerStats);
    const answer: StatsAnswer = await fromDaemon(this, (client) =>
      client.get<StatsAnswer>("/triggers/stats", {
        status: flags.status,
        by: flags.by,
        since: flags.since,
      }),
    );
    if (!this.jsonEnabled()) {
      this.log(`${flags.status} triggers by ${answer.by}: ${answer.total}`);
      for (const group of answer.groups)
        this.log(`  ${String(group.count).padStart(6)}  ${group[answer.by] ?? "(none)"}`);
    }
    return answer;
  }
}
