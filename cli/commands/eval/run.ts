import { Command, Flags } from "@oclif/core";
import { fromDaemon } from "../../from-daemon.ts";

interface EvalRunAnswer {
  evalRun: {
    id: string;
    pipeline: string;
    pipelineVersion: string;
    cases: { case: string; trigger: string }[];
  };
  compare: string;
}

export default class EvalRun extends Command {
  static override summary = "Replay curated cases through a pipeline as configured now";
  static override description =
    "Re-fires the events of a pipeline's curated cases (all of them, those listed with --case, or those with " +
    "--tag; at most 500, newest first) through the pipeline as the daemon is configured now (POST /evals/run), " +
    "as replay triggers marked with a new eval run id. When they have finished, `svc eval compare` sets the " +
    "run against the cases' original runs. Needs `evals:write` and `pipelines:invoke`.";
  static override examples = [
    "<%= config.bin %> eval run --pipeline pr-review",
    "<%= config.bin %> eval run --pipeline pr-review --tag regression",
    "<%= config.bin %> eval run --pipeline pr-review --case evc_2m4k6q8s0u2w4y6a8c0e --case evc_3n5p7r9t1v3x5z7b9d1f --json",
  ];
  static override enableJsonFlag = true;
  static override flags = {
    pipeline: Flags.string({
      description: "the pipeline to replay through",
      required: true,
      helpValue: "<name>",
    }),
    case: Flags.string({
      description: "an eval case id (repeatable)",
      multiple: true,
      multipleNonGreedy: true,
      helpValue: "<evc_…>",
    }),
    tag: Flags.string({ description: "only cases with this tag", helpValue: "<tag>" }),
  };

  async run(): Promise<EvalRunAnswer> {
    const { flags } = await this.parse(EvalRun);
    const answer: EvalRunAnswer = await fromDaemon(this, (client) =>
      client.post("/evals/run", {
        pipeline: flags.pipeline,
        ...(flags.case ? { cases: flags.case } : {}),
        ...(flags.tag ? { tag: flags.tag } : {}),
      }),
    );
    if (!this.jsonEnabled()) {
      const run = answer.evalRun;
      this.log(
        `${run.id}: ${run.cases.length} cases replaying through ${run.pipeline} ${run.pipelineVersion}`,
      );
      for (const entry of run.cases) this.log(`  ${entry.case} -> ${entry.trigger}`);
      this.log(
        `when they have finished: svc eval compare --pipeline ${run.pipeline} --a original:${run.id} --b run:${run.id}`,
      );
    }
    return answer;
  }
}
