import { Args, Command } from "@oclif/core";
import { fromDaemon } from "../../from-daemon.ts";

interface InspectAnswer {
  trigger: Record<string, unknown> & { diagnostic: { code: string; message: string } | null };
}

export default class TriggerInspect extends Command {
  static override summary = "Show one trigger with its payload and diagnostic";
  static override description =
    "Prints one trigger (GET /triggers/:id) including its payload and its diagnostic `{ code, message }`. " +
    "`--json` prints the record as JSON. Needs `triggers:read`.";
  static override examples = [
    "<%= config.bin %> trigger inspect trg_4kq7zdm2x9ab3cde5fgh",
    "<%= config.bin %> trigger inspect trg_4kq7zdm2x9ab3cde5fgh --json",
  ];
  static override enableJsonFlag = true;
  static override args = { id: Args.string({ description: "the full trigger id (trg_…)", required: true }) };

  async run(): Promise<InspectAnswer> {
    const { args } = await this.parse(TriggerInspect);
    if (!/^trg_[a-z2-7]+$/.test(args.id)) this.error(`"${args.id}" is not a trigger id (trg_…)`, { exit: 2 });
    const answer: InspectAnswer = await fromDaemon(this, (client) =>
      client.get<InspectAnswer>(`/triggers/${encodeURIComponent(args.id)}`),
    );
    if (!this.jsonEnabled()) {
      const { payload, diagnostic, ...rest } = answer.trigger;
      for (const [key, value] of Object.entries(rest)) this.log(`${key.padEnd(11)} ${value ?? "-"}`);
      this.log(
        `${"diagnostic".padEnd(11)} ${diagnostic ? `${diagnostic.code}: ${diagnostic.message}` : "-"}`,
      );
      this.log(`payload\n${JSON.stringify(payload, null, 2)}`);
    }
    return answer;
  }
}
