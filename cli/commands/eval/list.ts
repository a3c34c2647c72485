import { Command, Flags } from "@oclif/core";
import type { EvalCaseView } from "../../eval-views.ts";
import { fromDaemon } from "../../from-daemon.ts";
import { table } from "../../table.ts";

export default class EvalList extends Command {
  static override summary = "List eval cases, newest first";
  static override description =
    "Lists the curated eval cases (GET /evals): pipeline, version, what the run did and what the team " +
    "expected. Filter by pipeline, tag and expected outcome. Needs `evals:write`.";
  static override examples = [
    "<%= config.bin %> eval list",
    "<%= config.bin %> eval list --pipeline pr-review --tag regression",
    "<%= config.bin %> eval list --outcome fail --json",
  ];
  static override enableJsonFlag = true;
  static override flags = {
    pipeline: Flags.string({ description: "only cases of this pipeline", helpValue: "<name>" }),
    tag: Flags.string({ description: "only cases with this tag", helpValue: "<tag>" }),
    outcome: Flags.string({
      description: "only cases expected to pass or to fail",
      options: ["pass", "fail"],
    }),
    limit: Flags.integer({ description: "at most this many", default: 100, min: 1, max: 1000 }),
  };

  async run(): Promise<{ evals: EvalCaseView[] }> {
    const { flags } = await this.parse(EvalList);
    const answer: { evals: EvalCaseView[] } = await fromDaemon(this, (client) =>
      client.get("/evals", {
        pipeline: flags.pipeline,
        tag: flags.tag,
        outcome: flags.outcome,
        limit: flags.limit,
      }),
    );
    if (!this.jsonEnabled()) {
      if (!answer.evals.length) this.log("no eval cases match");
      else
        this.log(
          table(
            ["ID", "PIPELINE", "VERSION", "RAN", "EXPECTED", "TAGS", "NOTES"],
            answer.evals.map((c) => [
              c.id,
              c.pipeline,
              c.pipelineVersion,
              c.observedCode ? `${c.observed} (${c.observedCode})` : c.observed,
              c.expected,
              c.tags.join(",") || "-",
              c.notes.length > 60 ? `${c.notes.slice(0, 59)}…` : c.notes || "-",
            ]),
          ),
        );
    }
    return answer;
  }
}
