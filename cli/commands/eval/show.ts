import { Args, Command } from "@oclif/core";
import type { EvalCaseView } from "../../eval-views.ts";
import { describeCase } from "../../eval-views.ts";
import { fromDaemon } from "../../from-daemon.ts";

export default class EvalShow extends Command {
  static override summary = "Show one eval case";
  static override description =
    "Shows an eval case (GET /evals/:id): the run it was curated from, what the run did, what the team " +
    "expected, notes and tags. --json adds the event payload the case replays. Needs `evals:write`.";
  static override examples = [
    "<%= config.bin %> eval show evc_2m4k6q8s0u2w4y6a8c0e",
    "<%= config.bin %> eval show evc_2m4k6q8s0u2w4y6a8c0e --json",
  ];
  static override enableJsonFlag = true;
  static override args = { id: Args.string({ description: "the eval case (evc_…)", required: true }) };

  async run(): Promise<{ eval: EvalCaseView }> {
    const { args } = await this.parse(EvalShow);
    const answer: { eval: EvalCaseView } = await fromDaemon(this, (client) =>
      client.get(`/evals/${encodeURIComponent(args.id)}`),
    );
    if (!this.jsonEnabled()) this.log(describeCase(answer.eval));
    return answer;
  }
}
