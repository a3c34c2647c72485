import { Args, Command } from "@oclif/core";
import { fromDaemon } from "../../from-daemon.ts";

export default class EvalDelete extends Command {
  static override summary = "Delete an eval case";
  static override description =
    "Deletes an eval case (DELETE /evals/:id). Eval runs that replayed it, and their runs, stay. Needs `evals:write`.";
  static override examples = [
    "<%= config.bin %> eval delete evc_2m4k6q8s0u2w4y6a8c0e",
    "<%= config.bin %> eval delete evc_2m4k6q8s0u2w4y6a8c0e --json",
  ];
  static override enableJsonFlag = true;
  static override args = { id: Args.string({ description: "the eval case (evc_…)", required: true }) };

  async run(): Promise<{ deleted: string }> {
    const { args } = await this.parse(EvalDelete);
    await fromDaemon(this, (client) => client.request("DELETE", `/evals/${encodeURIComponent(args.id)}`));
    if (!this.jsonEnabled()) this.log(`deleted ${args.id}`);
    return { deleted: args.id };
  }
}
