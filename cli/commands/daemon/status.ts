import { Command } from "@oclif/core";
import { daemonUrl } from "../../client.ts";
import { configDirOf, dirFlag } from "../../config-dir-flag.ts";
import { ROLES, runningPid } from "../../daemon-processes.ts";
import { installation } from "../../update/installation.ts";

export interface StatusJson {
  url: string;
  reachable: boolean;
  health?: unknown;
  error?: string;
  processes: { role: string; pid: number | null }[];
  /** the version the daemon reports on `GET /`, and the one installed (this CLI's package) */
  version: { running: string | null; installed: string };
}

export default class DaemonStatus extends Command {
  static override summary = "Check that the daemon is reachable";
  static override description =
    "Asks the daemon at SVC_DAEMON_URL (default http://127.0.0.1:7420) for GET /health and lists the " +
    "background processes this host started, and the daemon's version next to the installed one when they " +
    "differ (after `svc update`, until `svc daemon restart`). Exits 1 when the daemon is unreachable or unhealthy.";
  static override examples = [
    "<%= config.bin %> daemon status",
    "SVC_DAEMON_URL=https://svc.example.com <%= config.bin %> daemon status --json",
  ];
  static override enableJsonFlag = true;
  static override flags = {
    dir: dirFlag,
  };

  async run(): Promise<StatusJson> {
    const { flags } = await this.parse(DaemonStatus);
    const configDir = configDirOf(flags.dir);
    let url: string;
    try {
      url = daemonUrl();
    } catch (error) {
      this.error((error as Error).message, { exit: 1 });
    }
    const processes = [];
    for (const role of ROLES) processes.push({ role, pid: (await runningPid(configDir, role)) ?? null });
    const json: StatusJson = {
      url,
      reachable: false,
      processes,
      version: { running: null, installed: installation().version },
    };
    try {
      const response = await fetch(`${url}/health`, { signal: AbortSignal.timeout(5_000) });
      json.health = await response.json().catch(() => null);
      json.reachable = response.ok;
      if (!response.ok) json.error = `GET /health answered ${response.status}`;
    } catch (error) {
      json.error = `unreachable (${(error as { cause?: { code?: string } }).cause?.code ?? (error as Error).name})`;
    }
    if (json.reachable) json.version.running = await runningVersion(url);
    if (!this.jsonEnabled()) {
      this.log(`daemon ${url}: ${json.reachable ? "reachable" : json.error}`);
      const { running, installed } = json.version;
      if (running && running !== installed)
        this.log(
          `  version: ${running} running, ${installed} installed - run \`svc daemon restart\` to switch`,
        );
      for (const entry of processes)
        this.log(`  ${entry.role}: ${entry.pid ? `running (pid ${entry.pid})` : "no local process"}`);
    }
    if (!json.reachable) process.exitCode = 1;
    return json;
  }
}

/** `GET /` answers `{ service, version }`, read once at the daemon's start. */
async function runningVersion(url: string): Promise<string | null> {
  try {
    const response = await fetch(`${url}/`, { signal: AbortSignal.timeout(5_000) });
    const body = (await response.json()) as { version?: unknown };
    return typeof body.version === "string" ? body.version : null;
  } catch {
    // an older daemon, or one behind a proxy that does not forward `/`: the version stays unknown
    return null;
  }
}
