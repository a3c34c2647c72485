import { Command } from "@oclif/core";
import { runIngress } from "../../ingress/main.ts";
import { configEnvOf, dirFlag } from "../config-dir-flag.ts";

export default class Ingress extends Command {
  static override summary =
    "Run the ingress in the foreground: verify webhooks, store them, serve the daemon API";
  static override description =
    "Reads the configuration once (restart to apply changes; SIGHUP is ignored), applies database migrations, " +
    "then listens on server.host:server.port (SVC_HOST / SVC_PORT override them). POST /webhooks/{name} and " +
    "POST /events are verified in constant time; an accepted request is stored as a trigger and a dispatch job " +
    "in one transaction and answered 202. Without SVC_DATABASE_URL it starts, or reuses, the embedded Postgres " +
    "under <config dir>/data/postgres. Refuses to start, printing every problem, when the configuration is " +
    "invalid or a stored secret cannot be read. SIGTERM stops accepting, finishes requests in flight and exits 0. " +
    "Logs are JSON lines (SVC_LOG_FORMAT=pretty for people).";
  static override examples = [
    "<%= config.bin %> ingress",
    "SVC_CONFIG_DIR=/etc/svc SVC_DATABASE_URL=postgres://svc@db/svc <%= config.bin %> ingress",
    "SVC_HOST=0.0.0.0 SVC_PORT=8080 <%= config.bin %> ingress --dir ./deploy/.svc",
  ];
  static override flags = {
    dir: dirFlag,
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Ingress);
    const env = configEnvOf(flags.dir);
    const code = await runIngress({ env });
    process.exitCode = code;
    // everything is closed by now; should a library still hold a handle, do not hang a stop
    setTimeout(() => process.exit(code), 2_000).unref();
  }
}
