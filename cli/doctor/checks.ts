import { access, readFile, stat } from "node:fs/promises";
import { relative } from "node:path";
import { createPool, redactUrl } from "../../db/connect.ts";
import { assertServerVersion, DatabaseVersionError } from "../../db/migrate.ts";
import { instanceKeyPath } from "../../shared/config/dir.ts";
import { loadConfig } from "../../shared/config/load.ts";
import { ConfigFile } from "../../shared/config/source.ts";
import type { ConfigProblem, LoadResult } from "../../shared/config/types.ts";
import { agentClisCheck } from "./agent-clis.ts";
import { codehostAppCheck } from "./codehost-app.ts";
import { codehostGitlabCheck } from "./codehost-gitlab.ts";
import { daemonProbeCheck } from "./daemon-probes.ts";
import { knowledgeCheck } from "./knowledge.ts";
import { repoCacheCheck } from "./repo-cache.ts";
import { repositoriesCheck } from "./repositories.ts";
import type { CheckOutcome, CheckStatus, DoctorCheck, DoctorContext } from "./types.ts";

export function doctorContext(dir: string, env: NodeJS.ProcessEnv): DoctorContext {
  let loaded: Promise<LoadResult> | undefined;
  return { dir, env, config: () => (loaded ??= loadConfig({ dir, env })) };
}

const ok = (detail: string): CheckOutcome => ({ status: "ok", detail, problems: [] });
const skipped = (detail: string): CheckOutcome => ({ status: "skipped", detail, problems: [] });

export const configDirCheck: DoctorCheck = {
  name: "config-dir",
  async run(ctx) {
    const found = await stat(ctx.dir).catch(() => undefined);
    if (found?.isDirectory()) return ok(ctx.dir);
    const problems: ConfigProblem[] = [];
    new ConfigFile(".", problems, ctx.dir).report(
      [],
      "config_dir_missing",
      `${found ? "is not a directory" : "does not exist"} - create the configuration directory with daemon.yaml and pipelines/, or point SVC_CONFIG_DIR (or --dir) at it`,
    );
    return { status: "error", detail: `${ctx.dir} is missing`, problems };
  },
};

export const configurationCheck: DoctorCheck = {
  name: "configuration",
  async run(ctx) {
    if (!(await stat(ctx.dir).catch(() => undefined))?.isDirectory())
      return skipped("no configuration directory");
    const result = await ctx.config();
    const errors = result.problems.filter((problem) => problem.severity === "error").length;
    const warnings = result.problems.length - errors;
    if (!result.ok)
      return {
        status: "error",
        detail: `${errors} error(s), ${warnings} warning(s)`,
        problems: result.problems,
      };
    const detail = `${Object.keys(result.config.pipelines).length} pipelines, ${warnings} warning(s)`;
    return { status: warnings ? "warning" : "ok", detail, problems: result.problems };
  },
};

const STORED_SECRET_KEY = /^\s*(?:-\s+)?(?:secret_ref|token_ref)\s*:/m;

export const instanceKeyCheck: DoctorCheck = {
  name: "instance-key",
  async run(ctx) {
    if (!(await stat(ctx.dir).catch(() => undefined))?.isDirectory())
      return skipped("no configuration directory");
    // decided from the text too, so a broken configuration still gets this answer
    const result = await ctx.config();
    const usesStored = result.ok
      ? usesStoredSecrets(result)
      : STORED_SECRET_KEY.test(await readFile(`${ctx.dir}/daemon.yaml`, "utf8").catch(() => ""));
    if (!usesStored) return skipped("no secret_ref in daemon.yaml");
    const keyPath = instanceKeyPath(ctx.dir, ctx.env);
    const shown = keyPath.startsWith(ctx.dir) ? relative(ctx.dir, keyPath) : keyPath;
    try {
      await access(keyPath);
      await readFile(keyPath);
      return ok(keyPath);
    } catch (error) {
      const missing = (error as NodeJS.ErrnoException).code === "ENOENT";
      const problems: ConfigProblem[] = [];
      new ConfigFile(shown, problems).report(
        [],
        missing ? "instance_key_missing" : "instance_key_unreadable",
        missing
          ? `is missing, but daemon.yaml uses secret_ref - create it with "svc setup instance-key" (or restore it), or set SVC_INSTANCE_KEY_FILE to its path`
          : `cannot be read (${(error as NodeJS.ErrnoException).code ?? "read error"}) - give the svc user read access to it`,
      );
      return { status: "error", detail: `${keyPath} ${missing ? "is missing" : "is unreadable"}`, problems };
    }
  },
};

function usesStoredSecrets(result: Extract<LoadResult, { ok: true }>): boolean {
  const { config } = result;
  const sources = [
    ...Object.values(config.webhooks.sources).flatMap((source) =>
      source.signingSecret ? [source.secret, source.signingSecret] : [source.secret],
    ),
    ...Object.values(config.targets).flatMap((target) =>
      target.credentials.map((credential) => credential.secret),
    ),
    ...Object.values(config.channels.chat.bots).map((bot) => bot.token),
    ...Object.values(config.auth?.tokens ?? {}).map((token) => token.secret),
    ...(config.auth?.broker?.secret ? [config.auth.broker.secret] : []),
    ...[config.codehost, ...Object.values(config.codehost?.principals ?? {})].flatMap((identity) =>
      identity?.token ? [identity.token] : identity?.app ? [identity.app.privateKey] : [],
    ),
  ];
  return sources.some((secret) => secret.kind === "stored");
}

export const databaseCheck: DoctorCheck = {
  name: "database",
  async run(ctx) {
    const url = ctx.env.SVC_DATABASE_URL?.trim();
    if (!url) return skipped("SVC_DATABASE_URL is not set: the daemon uses its embedded PostgreSQL");
    const pool = createPool(url, { max: 1, applicationName: "svc-doctor" });
    const problems: ConfigProblem[] = [];
    const file = new ConfigFile("SVC_DATABASE_URL", problems, `SVC_DATABASE_URL (${redactUrl(url)})`);
    try {
      const major = await assertServerVersion(pool);
      return ok(`PostgreSQL ${major} at ${redactUrl(url)}`);
    } catch (error) {
      if (error instanceof DatabaseVersionError) {
        file.report([], "database_too_old", error.message);
      } else {
        const reason = error instanceof Error ? error.message.split("\n")[0] : String(error);
        file.report(
          [],
          "database_unreachable",
          `cannot be reached (${reason}) - start the server, fix the URL or its credentials, or unset SVC_DATABASE_URL to use the embedded PostgreSQL`,
        );
      }
      return { status: "error", detail: problems[0]!.message, problems };
    } finally {
      await pool.end().catch(() => {});
    }
  },
};

/** Checks that need no running daemon; later modules append their probes to this list. */
export const DOCTOR_CHECKS: DoctorCheck[] = [
  configDirCheck,
  configurationCheck,
  instanceKeyCheck,
  databaseCheck,
  codehostAppCheck,
  codehostGitlabCheck,
  repositoriesCheck,
  repoCacheCheck,
  knowledgeCheck,
  agentClisCheck,
  daemonProbeCheck,
];

export interface DoctorReport {
  ok: boolean;
  checks: { name: string; status: CheckStatus; detail: string }[];
  problems: ConfigProblem[];
}

export async function runDoctor(checks: readonly DoctorCheck[], ctx: DoctorContext): Promise<DoctorReport> {
  const report: DoctorReport = { ok: true, checks: [], problems: [] };
  for (const check of checks) {
    let outcome: CheckOutcome;
    try {
      outcome = await check.run(ctx);
    } catch (error) {
      // one broken check must not hide the answers of the others
      const reason = error instanceof Error ? error.message.split("\n")[0] : String(error);
      outcome = { status: "error", detail: `check failed: ${reason}`, problems: [] };
    }
    report.checks.push({ name: check.name, status: outcome.status, detail: outcome.detail });
    report.problems.push(...outcome.problems);
    if (outcome.status === "error") report.ok = false;
  }
  return report;
}
