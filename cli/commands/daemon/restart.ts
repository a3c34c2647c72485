import { Command } from "@oclif/core";
import { configDirOf, dirFlag } from "../../config-dir-flag.ts";
import { type StartJson, startDaemon } from "./start.ts";
import { stopDaemon } from "./stop.ts";

export default class DaemonRestart extends Command {
  static override summary = "Stop, then start, the background ingress and worker";
  static override description =
    "The way to apply a configuration change: each process reads its configuration once at start, and there " +
    "is no reload. Validate first: `svc config validate && svc daemon restart`.";
  static override examples = [
    "<%= config.bin %> daemon restart",
    "<%= config.bin %> config validate && <%= config.bin %> daemon restart",
  ];
  static override enableJsonFlag = true;
  static override flags = {
    dir: dirFlag,
  };

  async run(): Promise<StartJson> {
    const { flags } = await this.parse(DaemonRestart);
    const configDir = configDirOf(flags.dir);
    await stopDaemon(this, configDir);
    return startDaemon(this, configDir);
  }
}
