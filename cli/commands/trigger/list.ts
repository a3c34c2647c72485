import { Command, Flags } from "@oclif/core";
import { fromDaemon } from "../../from-daemon.ts";
import { sinceFlag, statusFlag } from "../../trigger-flags.ts";

interface TriggerRow {
  id: string;
  kind: string;
  source: string;
  eventName: string;
  status: string;
  diagnostic: { code: string; message: string } | null;
  createdAt: string;
}
interface ListAnswer {
  triggers: TriggerRow[];
  nextCursor: string | null;
}

export default class TriggerList extends Command {
  static override summary = "List triggers, newest first";
  static override description =
    "Lists triggers recorded by the daemon (GET /triggers), without payloads. Filter by status, diagnostic code, " +
    "source and age; page with --cursor using the cursor printed after a full page. The status `timeout` no " +
    "longer exists: timed-out runs are `--status error --code agent_timeout`. Needs `triggers:read`.";
  static override examples = [
    "<%= config.bin %> trigger list",
    "<%= config.bin %> trigger list --status error --code agent_timeout",
    "<%= config.bin %> trigger list --source github --since 24h --limit 20 --json",
  ];
  static override enableJsonFlag = true;
  static override flags = {
    status: statusFlag("only triggers with this status"),
    code: Flags.string({
      description: "only triggers whose diagnostic has this code",
      helpValue: "<diagnostic_code>",
    }),
    source: Flags.string({
      description: "only triggers from this source (route name or pipeline)",
      helpValue: "<name>",
    }),
    since: sinceFlag,
    limit: Flags.integer({ description: "rows per page", default: 50, min: 1, max: 500 }),
    cursor: Flags.string({ description: "continue after a previous page", helpValue: "<cursor>" }),
  };

  async run(): Promise<ListAnswer> {
    const { flags } = await this.parse(TriggerList);
    const answer: ListAnswer = await fromDaemon(this, (client) =>
      client.get<ListAnswer>("/triggers", {
        status: flags.status,
        code: flags.code,
        source: flags.source,
        since: flags.since,
        limit: flags.limit,
        cursor: flags.cursor,
      }),
    );
    if (!this.jsonEnabled()) {
      if (!answer.triggers.length) this.log("no triggers match");
      for (const row of answer.triggers) {
        const code = row.diagnostic ? row.diagnostic.code : "-";
        this.log(
          [
            row.id,
            row.status.padEnd(9),
            row.kind.padEnd(8),
            row.source,
            row.eventName,
            code,
            row.createdAt,
          ].join("  "),
        );
      }
      if (answer.nextCursor) this.log(`more: --cursor ${answer.nextCursor}`);
    }
    return answer;
  }
}
