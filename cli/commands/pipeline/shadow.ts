import { resolve } from "node:path";
import { Args, Command, Flags } from "@oclif/core";
import { configDirOf, dirFlag } from "../../config-dir-flag.ts";
import { PipelineEditError, shadowPipeline, unshadowPipeline } from "../../pipeline-files.ts";

export default class PipelineShadow extends Command {
  static override summary = "Run a candidate version of a pipeline in the shadow of the live one";
  static override description =
    "Writes `shadow: { version_file, share }` into pipelines/<name>.yaml, keeping its comments. The candidate " +
    "(a pipeline file with its own version) is copied to pipelines/<name>.next.yaml unless it already is a file " +
    "of pipelines/. After a restart, each event the pipeline fires also runs the candidate on `--share` of them, " +
    "in its own invocation, its outputs never published but recorded as the run's held/outputs.md. The " +
    "configuration is checked afterwards, and an edit it refuses is undone. `--stop` removes the shadow (the " +
    'candidate\'s file stays). See docs/evals.md, "Shadow versions".';
  static override examples = [
    "<%= config.bin %> pipeline shadow pr-review ./pr-review.next.yaml",
    "<%= config.bin %> pipeline shadow pr-review .svc/pipelines/pr-review.next.yaml --share 0.25",
    "<%= config.bin %> pipeline shadow pr-review --stop",
  ];
  static override args = {
    name: Args.string({ description: "the live pipeline's name", required: true }),
    file: Args.string({ description: "the candidate's pipeline file" }),
  };
  static override flags = {
    dir: dirFlag,
    share: Flags.string({
      description: "the share of events the candidate also runs on, from 0 to 1 (0: only in backtests)",
      default: "1",
      helpValue: "<0..1>",
    }),
    force: Flags.boolean({ description: "replace an existing pipelines/<name>.next.yaml", default: false }),
    stop: Flags.boolean({ description: "remove the shadow; the candidate's file stays", default: false }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(PipelineShadow);
    const dir = configDirOf(flags.dir);
    try {
      if (flags.stop) {
        const was = await unshadowPipeline(dir, args.name);
        this.log(
          was
            ? `pipeline ${args.name} has no shadow now (${was} kept); restart the daemon: svc daemon restart`
            : `pipeline ${args.name} had no shadow: nothing changed`,
        );
        return;
      }
      if (!args.file) this.error("name the candidate's pipeline file, or pass --stop", { exit: 2 });
      const share = Number(flags.share);
      if (!(share >= 0 && share <= 1))
        this.error(
          `--share must be from 0 to 1 (0: the candidate runs only in backtests) (got ${flags.share})`,
          { exit: 2 },
        );
      const done = await shadowPipeline(dir, args.name, resolve(args.file), { share, force: flags.force });
      this.log(
        `pipeline ${args.name} runs ${done.versionFile} in its shadow on ${Math.round(share * 100)}% of its events` +
          `${done.copied ? ` (copied from ${args.file})` : ""}; restart the daemon: svc daemon restart`,
      );
    } catch (error) {
      if (error instanceof PipelineEditError) this.error(error.message, { exit: 1 });
      throw error;
    }
  }
}
