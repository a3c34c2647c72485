import { Args, Command, Flags } from "@oclif/core";
import { describeCase, type EvalCaseView } from "../../eval-views.ts";
import { fromDaemon } from "../../from-daemon.ts";

export default class EvalEdit extends Command {
  static override summary = "Change what the team expects of an eval case";
  static override description =
    "Changes an eval case (PATCH /evals/:id): the expected outcome, the expected result fields (`null` removes " +
    "them), the notes, or the tags (--tag replaces them all). What the case copied from its run never changes. " +
    "Needs `evals:write`.";
  static override examples = [
    "<%= config.bin %> eval edit evc_2m4k6q8s0u2w4y6a8c0e --expect fail",
    '<%= config.bin %> eval edit evc_2m4k6q8s0u2w4y6a8c0e --note "the build broke after merge" --tag regression --tag build',
    "<%= config.bin %> eval edit evc_2m4k6q8s0u2w4y6a8c0e --expect-result null --json",
  ];
  static override enableJsonFlag = true;
  static override args = { id: Args.string({ description: "the eval case (evc_…)", required: true }) };
  static override flags = {
    expect: Flags.string({ description: "the outcome the team expects", options: ["pass", "fail"] }),
    note: Flags.string({ description: "replace the notes", helpValue: "<text>" }),
    tag: Flags.string({
      description: "a tag (repeatable; replaces the tags)",
      multiple: true,
      multipleNonGreedy: true,
      helpValue: "<tag>",
    }),
    "expect-result": Flags.string({
      description: "a JSON object of result fields the run must return to pass, or null",
      helpValue: "<json>",
    }),
  };

  async run(): Promise<{ eval: EvalCaseView }> {
    const { args, flags } = await this.parse(EvalEdit);
    const patch: Record<string, unknown> = {};
    if (flags.expect) patch.expected = flags.expect;
    if (flags.note !== undefined) patch.notes = flags.note;
    if (flags.tag) patch.tags = flags.tag;
    if (flags["expect-result"] !== undefined) {
      try {
        patch.expectedResult = JSON.parse(flags["expect-result"]);
      } catch {
        this.error('--expect-result must be a JSON object such as \'{"verdict":"approve"}\', or null', {
          exit: 2,
        });
      }
    }
    if (!Object.keys(patch).length)
      this.error("nothing to change: give --expect, --note, --tag or --expect-result", { exit: 2 });
    const answer: { eval: EvalCaseView } = await fromDaemon(this, (client) =>
      client.request("PATCH", `/evals/${encodeURIComponent(args.id)}`, patch),
    );
    if (!this.jsonEnabled()) this.log(describeCase(answer.eval));
    return answer;
  }
}
