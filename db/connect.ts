import { join } from "node:path";
import pg from "pg";
import { startEmbeddedPostgres } from "./embedded.ts";
import type { Queryable } from "./queryable.ts";

export interface DatabaseLocation {
  url: string;
  /** true when svc started or reused its embedded Postgres for this url */
  embedded: boolean;
}

/**
 * `SVC_DATABASE_URL` when set (nothing embedded starts); otherwise the embedded Postgres kept
 * under `<config dir>/data/postgres`, started on demand and shared by every svc process.
 */
export async function resolveDatabase(
  configDir: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<DatabaseLocation> {
  const configured = env.SVC_DATABASE_URL?.trim();
  if (configured) return { url: configured, embedded: false };
  const embedded = await startEmbeddedPostgres({
    dataDir: join(configDir, "data", "postgres"),
    database: "svc",
  });
  return { url: embedded.url, embedded: true };
}

export function createPool(url: string, options: { max?: number; applicationName?: string } = {}): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max ?? 10,
    application_name: options.applicationName ?? "svc",
    connectionTimeoutMillis: 5_000,
    // a dead server must surface as an error on the request, not as a hang
    query_timeout: 30_000,
  });
  // An idle client losing its server (restart, failover) emits here; without a listener node exits.
  pool.on("error", () => {});
  return pool;
}

/**
 * A pool whose sessions commit asynchronously (`synchronous_commit=off`): a record written through
 * it costs a round trip, not a WAL flush. For what a crash may lose without harm to the run's
 * outcome (a worker's own records of a run: tasks, artifacts, heartbeats, agent tokens).
 * `onLost`: an idle client's lost connection; the pool drops it and the next query reports the failure.
 */
export function createAsyncCommitPool(
  url: string,
  options: { max: number; applicationName: string; onLost: (error: Error) => void },
): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max,
    application_name: options.applicationName,
    options: "-c synchronous_commit=off",
    connectionTimeoutMillis: 5_000,
    query_timeout: 30_000,
  });
  pool.on("error", options.onLost);
  return pool;
}

/** The readiness ping behind `GET /health`: resolves when the server answers, rejects otherwise. */
export async function pingDatabase(db: Queryable): Promise<void> {
  await db.query("SELECT 1");
}

/** The server's version string as Postgres reports it (e.g. "17.2"), for the daemon's doctor probe. */
export async function readServerVersion(db: Queryable): Promise<string | undefined> {
  const { rows } = await db.query<{ v: string }>("SHOW server_version");
  return rows[0]?.v;
}

/** A url with its password masked, for log lines and error messages. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return "<unparseable database url>";
  }
}
