import { Command } from "@oclif/core";

/** Kept only to answer people and scripts that still call it. */
export default class DaemonReload extends Command {
  static override summary = "Removed: configuration changes need a restart";
  static override description =
    "`svc daemon reload` and SIGHUP reload were removed. The daemon reads its configuration once at start; " +
    "apply a change with `svc config validate && svc daemon restart`.";
  static override examples = ["<%= config.bin %> config validate && <%= config.bin %> daemon restart"];

  async run(): Promise<void> {
    // one plain line, so scripts and people can grep the replacement command
    this.logToStderr(
      "svc daemon reload was removed: run `svc config validate && svc daemon restart` to apply configuration changes",
    );
    this.exit(1);
  }
}
