import { Command } from "@oclif/core";
import { resolveDatabase } from "../../db/connect.ts";
import { formatProblems } from "../../shared/config/format.ts";
import { loadConfig } from "../../shared/config/load.ts";
import { RetrievalToolError } from "../../shared/knowledge/qmd.ts";
import { KnowledgeIndexError } from "../../shared/knowledge/service.ts";
import { addLogFile, createLogger, LogFileError } from "../../shared/logger.ts";
import { startWorker } from "../../worker/main.ts";
import { configDirOf, dirFlag } from "../config-dir-flag.ts";

function millis(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const value = env[name];
  if (value === undefined || value.trim() === "") return undefined;
  const parsed = Number(value);
  if (!Number.isFinite(parsed) || parsed <= 0)
    throw new Error(`${name} must be a positive number of milliseconds`);
  return parsed;
}

export default class Worker extends Command {
  static override summary = "Run the worker role in the foreground: dispatch triggers and run pipelines";
  static override description =
    "Reads one configuration snapshot, connects to the database (SVC_DATABASE_URL, else the embedded Postgres), " +
    "and claims work from the queue, woken by LISTEN/NOTIFY with polling as a backstop. Runs up to " +
    "worker.concurrency invocations at once. SIGTERM or SIGINT stops claiming, lets running invocations finish " +
    "for worker.grace_period, then kills what is left and releases it for retry. SIGHUP is ignored: a " +
    "configuration change needs a restart. Any number of workers may run against one database.";
  static override examples = [
    "<%= config.bin %> worker",
    "SVC_CONFIG_DIR=/etc/svc SVC_DATABASE_URL=postgres://svc@db/svc <%= config.bin %> worker",
    "<%= config.bin %> worker --dir ./.svc",
  ];
  static override flags = {
    dir: dirFlag,
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Worker);
    const env = process.env;
    const dir = configDirOf(flags.dir, env);
    const logger = createLogger({ role: "worker" });
    const loaded = await loadConfig({ dir, env });
    if (!loaded.ok) {
      this.logToStderr(formatProblems(loaded.problems));
      this.exit(1);
    }
    if (loaded.config.log) {
      try {
        addLogFile(logger, loaded.config.log);
      } catch (error) {
        if (!(error instanceof LogFileError)) throw error;
        this.logToStderr(`svc worker: refusing to start\n${error.message}`);
        this.exit(1);
      }
    }
    // signals are wired before anything starts, so a SIGTERM during start-up is not lost
    let requested: string | undefined;
    let onSignal: (signal: string) => void = (signal) => {
      requested ??= signal;
    };
    process.once("SIGTERM", () => onSignal("SIGTERM"));
    process.once("SIGINT", () => onSignal("SIGINT"));
    process.on("SIGHUP", () => {
      logger.warn("SIGHUP ignored: svc has no reload; run `svc config validate && svc daemon restart`", {
        event: "worker.sighup_ignored",
      });
    });
    const database = await resolveDatabase(dir, env);
    const worker = await startWorker({
      config: loaded.config,
      databaseUrl: database.url,
      logger,
      env,
      heartbeatMs: millis(env, "SVC_WORKER_HEARTBEAT_MS"),
      staleAfterMs: millis(env, "SVC_WORKER_STALE_MS"),
      probeIntervalMs: millis(env, "SVC_WORKER_PROBE_MS"),
    }).catch((error: Error) => {
      // the knowledge boot check's message is the whole story: no stack trace around it
      if (error instanceof RetrievalToolError || error instanceof KnowledgeIndexError) {
        this.logToStderr(`svc worker: refusing to start\n${error.message}`);
        this.exit(1);
      }
      throw error;
    });
    await new Promise<void>((resolve) => {
      onSignal = (signal) => {
        logger.info(`${signal} received`, { event: "worker.signal", signal });
        worker.stop().then(resolve, (error) => {
          logger.error("worker stop failed", {
            event: "worker.stop_failed",
            error: (error as Error).message,
          });
          process.exitCode = 1;
          resolve();
        });
      };
      if (requested) onSignal(requested);
    });
    // everything svc opened is closed; idle keep-alive sockets of the model APIs must not delay the exit
    setTimeout(() => process.exit(process.exitCode ?? 0), 500).unref();
  }
}
