import { Args, Command, Flags } from "@oclif/core";
import type { EvalCaseView } from "../../eval-views.ts";
import { fromDaemon } from "../../from-daemon.ts";

export default class EvalAdd extends Command {
  static override summary = "Curate a finished run into an eval case";
  static override description =
    "Turns a finished invocation into an eval case (POST /evals): svc copies its event, pipeline, version, " +
    "target and outcome, so the case outlives the run's retention, and records the outcome the team expected. " +
    "--expect-result adds result fields the run must return for a pass. Needs `evals:write`.";
  static override examples = [
    "<%= config.bin %> eval add inv_3kq7v2xw5bnm4hyt6rce --expect pass",
    '<%= config.bin %> eval add inv_3kq7v2xw5bnm4hyt6rce --expect fail --note "approved a PR that broke the build" --tag regression --tag build',
    '<%= config.bin %> eval add inv_3kq7v2xw5bnm4hyt6rce --expect pass --expect-result \'{"verdict":"request_changes"}\' --json',
  ];
  static override enableJsonFlag = true;
  static override args = {
    invocation: Args.string({ description: "the finished invocation (inv_…)", required: true }),
  };
  static override flags = {
    expect: Flags.string({
      description: "the outcome the team expected",
      options: ["pass", "fail"],
      required: true,
    }),
    note: Flags.string({ description: "free text kept with the case", helpValue: "<text>" }),
    tag: Flags.string({
      description: "a tag (repeatable)",
      multiple: true,
      multipleNonGreedy: true,
      helpValue: "<tag>",
    }),
    "expect-result": Flags.string({
      description: "a JSON object of result fields the run must return to pass",
      helpValue: "<json>",
    }),
  };

  async run(): Promise<{ eval: EvalCaseView }> {
    const { args, flags } = await this.parse(EvalAdd);
    let expectedResult: unknown;
    if (flags["expect-result"] !== undefined) {
      try {
        expectedResult = JSON.parse(flags["expect-result"]);
      } catch {
        this.error('--expect-result must be a JSON object such as \'{"verdict":"approve"}\'', { exit: 2 });
      }
    }
    const answer: { eval: EvalCaseView } = await fromDaemon(this, (client) =>
      client.post("/evals", {
        invocation: args.invocation,
        expected: flags.expect,
        ...(flags.note === undefined ? {} : { notes: flags.note }),
        ...(flags.tag ? { tags: flags.tag } : {}),
        ...(expectedResult === undefined ? {} : { expectedResult }),
      }),
    );
    const created = answer.eval;
    if (!this.jsonEnabled())
      this.log(
        `${created.id}: ${created.pipeline} ${created.pipelineVersion ?? "(unversioned)"} on ${created.target ?? "-"}, ` +
          `ran ${created.observed}${created.observedCode ? ` (${created.observedCode})` : ""}, expected ${created.expected}`,
      );
    return answer;
  }
}
