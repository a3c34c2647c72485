import { Command } from "@oclif/core";
import { configDirOf, dirFlag } from "../../config-dir-flag.ts";
import { logPath, ROLES, type Started, startRole } from "../../daemon-processes.ts";

export interface StartJson {
  configDir: string;
  url?: string;
  roles: { role: string; pid: number; alreadyRunning: boolean; log: string }[];
}

export default class DaemonStart extends Command {
  static override summary = "Start the ingress and the worker as background processes";
  static override description =
    "Starts `svc ingress` and `svc worker` detached, with pid files and logs under <config dir>/run/, and " +
    "waits until each reports ready (the ingress listening, the worker claiming). A role already running is " +
    "left alone. Configuration is read once at start: after a change run `svc config validate && svc daemon restart`.";
  static override examples = [
    "<%= config.bin %> daemon start",
    "SVC_CONFIG_DIR=/etc/svc <%= config.bin %> daemon start",
    "SVC_PORT=0 <%= config.bin %> daemon start --json",
  ];
  static override enableJsonFlag = true;
  static override flags = {
    dir: dirFlag,
  };

  async run(): Promise<StartJson> {
    const { flags } = await this.parse(DaemonStart);
    const configDir = configDirOf(flags.dir);
    return startDaemon(this, configDir);
  }
}

/** Shared with `svc daemon restart`. */
export async function startDaemon(command: Command, configDir: string): Promise<StartJson> {
  const started: Started[] = [];
  for (const role of ROLES) {
    try {
      started.push(await startRole(configDir, role, process.env));
    } catch (error) {
      command.error((error as Error).message, { exit: 1 });
    }
  }
  const ingress = started.find((entry) => entry.role === "ingress")?.ready;
  const url =
    ingress && typeof ingress.port === "number"
      ? `http://${String(ingress.host).includes(":") ? `[${ingress.host}]` : ingress.host}:${ingress.port}`
      : undefined;
  const json: StartJson = {
    configDir,
    ...(url ? { url } : {}),
    roles: started.map((entry) => ({
      role: entry.role,
      pid: entry.pid,
      alreadyRunning: entry.alreadyRunning,
      log: logPath(configDir, entry.role),
    })),
  };
  if (!command.jsonEnabled()) {
    for (const entry of started) {
      command.log(
        `${entry.role}: ${entry.alreadyRunning ? "already running" : "started"} (pid ${entry.pid})` +
          (entry.role === "ingress" && url ? `, listening on ${url}` : ""),
      );
    }
  }
  return json;
}
