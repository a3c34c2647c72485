import type pg from "pg";
import type { PgBoss } from "pg-boss";
import { startBoss } from "../db/boss.ts";
import { createPool, redactUrl, resolveDatabase } from "../db/connect.ts";
import { migrate } from "../db/migrate.ts";
import { readSecrets } from "../db/secrets.ts";
import { SIGNING_SECRET_REF_SUFFIX } from "../shared/config/daemon/webhooks.ts";
import { configDirFrom, instanceKeyPath } from "../shared/config/dir.ts";
import { formatProblems } from "../shared/config/format.ts";
import { loadConfig } from "../shared/config/load.ts";
import type { SecretSource } from "../shared/config/secret-source.ts";
import { openKnowledgeForRole } from "../shared/knowledge/boot.ts";
import { addLogFile, createLogger, LogFileError, type Logger } from "../shared/logger.ts";
import { readInstanceKey } from "../shared/secrets/instance-key.ts";
import { storedSecretRefs } from "../shared/secrets/refs.ts";
import { createIngressApp } from "./app.ts";
import { coalescedStdout } from "./log-stream.ts";
import { handleSignals, type ListeningServer, listen } from "./server.ts";
import { SourceConfigError } from "./webhooks/sources.ts";

/** A reason not to start, printed as is (configuration problems come preformatted). */
export class StartupError extends Error {}

export interface Ingress {
  host: string;
  port: number;
  /** drain, then release the database; resolves when everything is closed */
  stop(): Promise<void>;
}

export interface IngressOptions {
  env?: NodeJS.ProcessEnv;
  logger?: Logger;
  /** connections the request path may hold; concurrent webhooks beyond it wait for one */
  poolSize?: number;
}

/** Connections for the request path: enough to keep 2 cores busy while commits wait on the disk. */
export const DEFAULT_POOL_SIZE = 16;

export async function startIngress(options: IngressOptions = {}): Promise<Ingress> {
  const env = options.env ?? process.env;
  const logger = options.logger ?? ingressLogger();
  const configDir = configDirFrom(env);
  const loaded = await loadConfig({ dir: configDir, env });
  if (!loaded.ok) {
    throw new StartupError(`svc ingress: refusing to start\n${formatProblems(loaded.problems)}`);
  }
  for (const problem of loaded.problems) {
    logger.warn(problem.message, { event: "config.warning", file: problem.file, path: problem.path });
  }
  const config = loaded.config;
  if (config.log) {
    try {
      addLogFile(logger, config.log);
    } catch (error) {
      if (error instanceof LogFileError)
        throw new StartupError(`svc ingress: refusing to start\n${error.message}`);
      throw error;
    }
  }

  // the ingress uses the webhook sources and the API tokens; the worker resolves its own secrets
  const refs = storedSecretRefs({
    webhooks: config.webhooks,
    auth: config.auth,
    askTargets: askTargetsOf(config),
    metrics: config.metrics,
  });
  // the key file is checked before the database, so the cheaper, likelier mistake is reported first
  const key = refs.length
    ? await readKeyForStartup(instanceKeyPath(configDir, env), refs[0]!.usedBy)
    : undefined;

  // knowledge sources found → qmd at its floor and a current index, or no start
  const knowledge = await openKnowledgeForRole(config, logger).catch((error: Error) => {
    throw new StartupError(`svc ingress: refusing to start\n${error.message}`);
  });

  const database = await resolveDatabase(configDir, env).catch((error: Error) => {
    throw new StartupError(`svc ingress: cannot start the embedded Postgres: ${error.message}`);
  });
  const pool = createPool(database.url, {
    max: options.poolSize ?? DEFAULT_POOL_SIZE,
    applicationName: "svc-ingress",
  });
  let boss: PgBoss | undefined;
  try {
    await migrate(pool).catch((error: Error) => {
      throw new StartupError(
        `svc ingress: cannot prepare the database at ${redactUrl(database.url)}: ${error.message}` +
          (refs.length ? " (stored secrets are in use, so svc cannot start without the database)" : ""),
      );
    });
    const resolveSecret = await storedSecrets(pool, key, refs);
    boss = await startBoss({ url: database.url, max: 2, supervise: false, schedule: false });
    const keyPath = instanceKeyPath(configDir, env);
    const app = ingressApp({
      config,
      pool,
      boss,
      logger,
      resolveSecret,
      knowledge,
      instanceKeyPath: keyPath,
    });
    const server = await listen(app, config.server.host, config.server.port).catch((error: Error) => {
      throw new StartupError(`svc ingress: ${error.message}`);
    });
    logger.info(`listening on http://${formatHost(server.host)}:${server.port}`, {
      event: "ingress.listening",
      host: server.host,
      port: server.port,
      database: database.embedded ? "embedded" : redactUrl(database.url),
      sources: Object.keys(config.webhooks.sources).length,
    });
    return {
      host: server.host,
      port: server.port,
      stop: () => shutdown(server, pool, boss!),
    };
  } catch (error) {
    // the start-up error is what the operator needs to see; a failure to close after it is not
    await boss?.stop({ graceful: false, close: true }).catch(() => {});
    await pool.end().catch(() => {});
    throw error;
  }
}

/**
 * Decrypts every stored secret the ingress uses (webhook sources, API tokens, ask targets, the
 * metrics token) once, at start-up: one that the database does not hold stops the start, naming
 * where it is used and how to store it. Returns how a request resolves a secret source.
 */
async function storedSecrets(
  pool: pg.Pool,
  key: Buffer | undefined,
  refs: ReturnType<typeof storedSecretRefs>,
): Promise<(source: SecretSource) => string> {
  const stored = new Map<string, string>();
  if (key) {
    const values = await readSecrets(
      pool,
      key,
      refs.map((ref) => ref.name),
    ).catch((error: Error) => {
      throw new StartupError(`svc ingress: ${error.message}`);
    });
    const missing = refs.filter((ref) => !values.has(ref.name));
    if (missing.length) {
      throw new StartupError(
        missing
          .map(
            (ref) =>
              `svc ingress: ${ref.usedBy} refers to the stored secret ${ref.name}, which the database does not hold; ` +
              `${howToStore(ref.name)}, then start again`,
          )
          .join("\n"),
      );
    }
    for (const [name, value] of values) stored.set(name, value);
  }
  return (source) => {
    if (source.kind === "inline") return source.value;
    const value = stored.get(source.name);
    if (value === undefined) throw new Error(`the stored secret ${source.name} was not resolved at start-up`);
    return value;
  };
}

function ingressApp(deps: Parameters<typeof createIngressApp>[0]): ReturnType<typeof createIngressApp> {
  try {
    return createIngressApp(deps);
  } catch (error) {
    if (error instanceof SourceConfigError)
      throw new StartupError(`svc ingress: refusing to start\n${error.message}`);
    throw error;
  }
}

async function shutdown(server: ListeningServer, pool: pg.Pool, boss: PgBoss): Promise<void> {
  await server.drain();
  // nothing is left to hand over once the server has drained: a failed stop must not keep the pool open
  await boss.stop({ graceful: false, close: true }).catch(() => {});
  await pool.end();
}

/** `svc ingress`: runs until SIGTERM or SIGINT, then drains and returns the exit code. */
export async function runIngress(options: IngressOptions = {}): Promise<number> {
  const logger = options.logger ?? ingressLogger();
  let ingress: Ingress;
  try {
    ingress = await startIngress({ ...options, logger });
  } catch (error) {
    if (error instanceof StartupError) {
      process.stderr.write(`${error.message}\n`);
      return 1;
    }
    throw error;
  }
  return await new Promise<number>((resolve) => {
    const release = handleSignals(logger, async (signal) => {
      logger.info(`${signal} received: finishing requests in flight, then stopping`, {
        event: "ingress.stopping",
        signal,
      });
      try {
        await ingress.stop();
        logger.info("stopped", { event: "ingress.stopped" });
        resolve(0);
      } catch (error) {
        logger.error("stopping failed", { event: "ingress.stop_failed", error: (error as Error).message });
        resolve(1);
      } finally {
        release();
      }
    });
  });
}

function ingressLogger(): Logger {
  return createLogger({ role: "ingress", stream: coalescedStdout() });
}

async function readKeyForStartup(path: string, usedBy: string): Promise<Buffer> {
  try {
    return await readInstanceKey(path);
  } catch (error) {
    throw new StartupError(`svc ingress: ${usedBy} uses a stored secret, but ${(error as Error).message}`);
  }
}

function howToStore(name: string): string {
  if (!name.startsWith("webhook/")) return "store it first";
  const rest = name.slice("webhook/".length);
  const signing = rest.endsWith(SIGNING_SECRET_REF_SUFFIX);
  const source = signing ? rest.slice(0, -SIGNING_SECRET_REF_SUFFIX.length) : rest;
  return `store it with \`svc setup webhook ${source}${signing ? " --signing" : ""} --secret-env <ENV_NAME>\``;
}

/** The targets /ask and query rewriting use by default: their stored credentials are loaded at start. */
function askTargetsOf(config: {
  targets: Record<string, unknown>;
  ask: { targets: string[] };
  knowledge: { retrieval: { rewrite: { targets: string[] } } };
}) {
  const names = new Set([...config.ask.targets, ...config.knowledge.retrieval.rewrite.targets]);
  return Object.fromEntries(Object.entries(config.targets).filter(([name]) => names.has(name)));
}

function formatHost(host: string): string {
  return host.includes(":") ? `[${host}]` : host;
}
