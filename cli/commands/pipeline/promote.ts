import { Args, Command } from "@oclif/core";
import { configDirOf, dirFlag } from "../../config-dir-flag.ts";
import { PipelineEditError, promotePipeline } from "../../pipeline-files.ts";

export default class PipelinePromote extends Command {
  static override summary = "Make a pipeline's shadow candidate the live version";
  static override description =
    "The candidate named by `shadow.version_file` becomes pipelines/<name>.yaml (without a shadow), and the " +
    "live file is kept as pipelines/previous/<name>@<version>.yaml, which the daemon does not load. The " +
    "configuration is checked afterwards, and a promotion it refuses is undone. Restart the daemon to run it.";
  static override examples = ["<%= config.bin %> pipeline promote pr-review"];
  static override args = { name: Args.string({ description: "the live pipeline's name", required: true }) };
  static override flags = { dir: dirFlag };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(PipelinePromote);
    try {
      const done = await promotePipeline(configDirOf(flags.dir), args.name);
      this.log(
        `pipeline ${args.name}: ${done.to} is live (was ${done.from}, kept as ${done.kept}); restart the daemon: svc daemon restart`,
      );
    } catch (error) {
      if (error instanceof PipelineEditError) this.error(error.message, { exit: 1 });
      throw error;
    }
  }
}
