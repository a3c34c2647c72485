import { join } from "node:path";
import { Command } from "@oclif/core";
import { stopEmbeddedPostgres } from "../../../db/embedded.ts";
import { configDirOf, dirFlag } from "../../config-dir-flag.ts";
import { ROLES, runningPid } from "../../daemon-processes.ts";

export interface DbStopJson {
  dataDir: string;
  result: "stopped" | "not-running" | "absent";
}

export default class DbStop extends Command {
  static override summary = "Stop the embedded Postgres that svc started";
  static override description =
    "Without SVC_DATABASE_URL, `svc dev`, `svc daemon start` and each role start (or reuse) an embedded " +
    "Postgres under <config dir>/data/postgres and leave it running for the next start. This stops it " +
    "(pg_ctl stop, fast mode). It refuses while `svc daemon` processes of this configuration directory are " +
    "running: stop them first with `svc daemon stop` (or Ctrl-C `svc dev`). A server you configured through " +
    "SVC_DATABASE_URL is never touched.";
  static override examples = [
    "<%= config.bin %> daemon stop && <%= config.bin %> db stop",
    "<%= config.bin %> db stop --dir ./deploy/.svc --json",
  ];
  static override enableJsonFlag = true;
  static override flags = {
    dir: dirFlag,
  };

  async run(): Promise<DbStopJson> {
    const { flags } = await this.parse(DbStop);
    const configDir = configDirOf(flags.dir);
    for (const role of ROLES) {
      const pid = await runningPid(configDir, role);
      if (pid)
        this.error(`svc ${role} (pid ${pid}) still uses this database - run \`svc daemon stop\` first`, {
          exit: 1,
        });
    }
    const dataDir = join(configDir, "data", "postgres");
    let result: DbStopJson["result"];
    try {
      result = await stopEmbeddedPostgres(dataDir);
    } catch (error) {
      this.error((error as Error).message, { exit: 1 });
    }
    if (!this.jsonEnabled()) {
      this.log(
        result === "stopped"
          ? `stopped the embedded Postgres in ${dataDir}`
          : result === "not-running"
            ? `the embedded Postgres in ${dataDir} is not running`
            : `there is no embedded Postgres in ${dataDir} (svc starts one only without SVC_DATABASE_URL)`,
      );
    }
    return { dataDir, result };
  }
}
