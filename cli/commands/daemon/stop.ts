import { Command } from "@oclif/core";
import { configDirOf, dirFlag } from "../../config-dir-flag.ts";
import { ROLES, stopRole } from "../../daemon-processes.ts";

export interface StopJson {
  roles: { role: string; pid?: number; stopped: boolean; killed: boolean }[];
}

export default class DaemonStop extends Command {
  static override summary = "Stop the background ingress and worker";
  static override description =
    "Sends SIGTERM to the processes named by the pid files under <config dir>/run/ and waits: the ingress " +
    "finishes requests in flight, the worker lets running invocations finish up to its grace period. A role " +
    "that is not running is reported, not an error.";
  static override examples = [
    "<%= config.bin %> daemon stop",
    "SVC_CONFIG_DIR=/etc/svc <%= config.bin %> daemon stop --json",
  ];
  static override enableJsonFlag = true;
  static override flags = {
    dir: dirFlag,
  };

  async run(): Promise<StopJson> {
    const { flags } = await this.parse(DaemonStop);
    const configDir = configDirOf(flags.dir);
    return stopDaemon(this, configDir);
  }
}

export async function stopDaemon(command: Command, configDir: string): Promise<StopJson> {
  const roles: StopJson["roles"] = [];
  // the worker first, so nothing new is dispatched while the ingress still takes events
  for (const role of [...ROLES].reverse()) {
    const result = await stopRole(configDir, role);
    roles.push({
      role,
      ...(result.pid ? { pid: result.pid } : {}),
      stopped: result.pid !== undefined,
      killed: result.killed,
    });
    if (!command.jsonEnabled()) {
      command.log(
        result.pid
          ? `${role}: stopped (pid ${result.pid}${result.killed ? ", killed after the stop timeout" : ""})`
          : `${role}: not running`,
      );
    }
  }
  return { roles };
}
