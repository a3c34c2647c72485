import { join } from "node:path";
import pg from "pg";
import { startEmbeddedPostgres } from "./embedded.ts";

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
