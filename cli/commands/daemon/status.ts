import { Command, Flags } from "@oclif/core";
import { configDirFrom } from "../../../shared/config/dir.ts";
import { daemonUrl } from "../../client.ts";
import { ROLES, runningPid } from "../../daemon-processes.ts";

export interface StatusJson {
  url: string;
  reachable: boolean;
  health?: unknown;
  error?: string;
  processes: { role: string; pid: number | null }[];
}

export default class DaemonStatus extends Command {
  static override summary = "Check that the daemon is reachable";
  static override description =
    "Asks the daemon at SVC_DAEMON_URL (default http://127.0.0.1:7420) for GET /health and lists the " +
    "background processes this host started. Exits 1 when the daemon is unreachable or unhealthy.";
  static override examples = [
    "<%= config.bin %> daemon status",
    "SVC_DAEMON_URL=https://svc.example.com <%= config.bin %> daemon status --json",
  ];
  static override enableJsonFlag = true;
  static override flags = {
    dir: Flags.string({
      description: "configuration directory (default: $SVC_CONFIG_DIR, else ./.svc)",
      helpValue: "<path>",
    }),
  };

  async run(): Promise<StatusJson> {
    const { flags } = await this.parse(DaemonStatus);
    const configDir = flags.dir ? configDirFrom({ SVC_CONFIG_DIR: flags.dir }) : configDirFrom(process.env);
    let url: string;
    try {
      url = daemonUrl();
    } catch (error) {
      this.error((error as Error).message, { exit: 1 });
    }
    const processes = [];
    for (const role of ROLES) processes.push({ role, pid: (await runningPid(configDir, role)) ?? null });
    const json: StatusJson = { url, reachable: false, processes };
    try {
      const response = await fetch(`${url}/health`, { signal: AbortSignal.timeout(5_000) });
      json.health = await response.json().catch(() => null);
      json.reachable = response.ok;
      if (!response.ok) json.error = `GET /health answered ${response.status}`;
    } catch (error) {
      json.error = `unreachable (${(error as { cause?: { code?: string } }).cause?.code ?? (error as Error).name})`;
    }
    if (!this.jsonEnabled()) {
      this.log(`daemon ${url}: ${json.reachable ? "reachable" : json.error}`);
      for (const entry of processes)
        this.log(`  ${entry.role}: ${entry.pid ? `running (pid ${entry.pid})` : "no local process"}`);
    }
    if (!json.reachable) process.exitCode = 1;
    return json;
  }
}
