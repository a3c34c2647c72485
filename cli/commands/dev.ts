import { type ChildProcess, spawn } from "node:child_process";
import { stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { Command } from "@oclif/core";
import { resolveDatabase } from "../../db/connect.ts";
import { configDirFrom } from "../../shared/config/dir.ts";
import { configEnvOf, dirFlag } from "../config-dir-flag.ts";
import { writeStarterConfig } from "../dev/starter.ts";

const BIN = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "bin", "svc.js");
const COLORS: Record<string, string> = { ingress: "\u001b[36m", worker: "\u001b[35m" };

export default class Dev extends Command {
  static override summary = "Run the ingress and the worker in the foreground with readable logs";
  static override description =
    "Starts `svc ingress` and `svc worker` as child processes and prints their logs, prefixed by role, in a " +
    "readable form. Without SVC_DATABASE_URL it first starts, or reuses, the embedded Postgres under " +
    "<config dir>/data/postgres, which both roles share. When the configuration directory does not exist, it " +
    "writes a starter daemon.yaml there (one bearer webhook named hello). Ctrl-C or SIGTERM stops both roles " +
    "gracefully; if one role exits, the other is stopped and dev exits with its code.";
  static override examples = [
    "<%= config.bin %> dev",
    "SVC_CONFIG_DIR=./examples/.svc <%= config.bin %> dev",
    "SVC_DATABASE_URL=postgres://postgres@127.0.0.1:5432/svc <%= config.bin %> dev",
  ];
  static override flags = {
    dir: dirFlag,
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Dev);
    // a copy: the roles dev starts get the resolved directory and a log format set below
    const env: NodeJS.ProcessEnv = { ...configEnvOf(flags.dir) };
    const configDir = configDirFrom(env);
    env.SVC_CONFIG_DIR = configDir;
    env.SVC_LOG_FORMAT ??= "pretty";

    if (!(await stat(configDir).catch(() => undefined))) {
      const { files } = await writeStarterConfig(configDir);
      this.log(`dev: ${configDir} did not exist; wrote a starter configuration: ${files.join(", ")}`);
      this.log(
        "dev: its webhook is POST /webhooks/hello with the bearer token in webhooks.sources.hello.secret",
      );
    }
    if (!env.SVC_DATABASE_URL?.trim()) {
      this.log(
        `dev: starting (or reusing) the embedded Postgres under ${join(configDir, "data", "postgres")}`,
      );
      try {
        await resolveDatabase(configDir, env);
      } catch (error) {
        process.stderr.write(`dev: ${(error as Error).message}\n`);
        this.exit(1);
      }
    }

    const roles = ["ingress"];
    if (this.config.findCommand("worker")) roles.push("worker");
    else this.log("dev: this build has no `svc worker` command yet; running the ingress only");

    const children = new Map<string, ChildProcess>();
    const exits = roles.map(
      (role) =>
        new Promise<{ role: string; code: number }>((resolve) => {
          const child = spawn(process.execPath, [BIN, role], { env, stdio: ["ignore", "pipe", "pipe"] });
          children.set(role, child);
          prefixLines(role, child.stdout!, process.stdout);
          prefixLines(role, child.stderr!, process.stderr);
          child.on("exit", (code, signal) => resolve({ role, code: code ?? (signal ? 1 : 0) }));
        }),
    );

    let stopping = false;
    let bySignal = false;
    const stopAll = (signal: NodeJS.Signals) => {
      stopping = true;
      for (const child of children.values()) if (child.exitCode === null) child.kill(signal);
    };
    const onSignal = (signal: NodeJS.Signals) => {
      if (!stopping) this.log(`dev: ${signal} received, stopping ${roles.join(" and ")}`);
      bySignal = true;
      stopAll(signal);
    };
    const onHup = () => this.log("dev: SIGHUP ignored; restart to apply configuration changes");
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
    process.on("SIGHUP", onHup);

    // the first role to exit decides: an unexpected exit stops the others and fails dev
    const first = await Promise.race(exits);
    if (!stopping) {
      this.log(`dev: ${first.role} exited with code ${first.code}; stopping the others`);
      stopAll("SIGTERM");
    }
    const all = await Promise.all(exits);
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    process.off("SIGHUP", onHup);
    const failed = all.find((exit) => exit.code !== 0);
    process.exitCode = failed ? failed.code : bySignal ? 0 : 1;
  }
}

function prefixLines(role: string, from: NodeJS.ReadableStream, to: NodeJS.WritableStream): void {
  const color = to === process.stdout && process.stdout.isTTY ? (COLORS[role] ?? "") : "";
  const reset = color ? "\u001b[0m" : "";
  const label = `${color}${role.padEnd(7)}${reset} | `;
  createInterface({ input: from, crlfDelay: Number.POSITIVE_INFINITY }).on("line", (line) => {
    to.write(`${label}${line}\n`);
  });
}
