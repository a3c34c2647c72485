import { readdir, readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type pg from "pg";

export const MINIMUM_SERVER_VERSION = 15;
const MIGRATIONS_DIR = join(dirname(fileURLToPath(import.meta.url)), "migrations");
// one fixed key: every svc process serialises its migrations on it
const MIGRATION_LOCK_KEY = 7_420_001;

export class DatabaseVersionError extends Error {}

/** Fails with a message naming the floor; the contract's floor is PostgreSQL 15. */
export async function assertServerVersion(client: pg.ClientBase | pg.Pool): Promise<number> {
  const { rows } = await client.query<{ server_version_num: string }>("SHOW server_version_num");
  const versionNum = Number(rows[0]?.server_version_num ?? 0);
  const major = Math.floor(versionNum / 10_000);
  if (major < MINIMUM_SERVER_VERSION) {
    throw new DatabaseVersionError(
      `the database server is PostgreSQL ${major}; svc needs PostgreSQL ${MINIMUM_SERVER_VERSION} or later. ` +
        "Upgrade the server, or unset SVC_DATABASE_URL to use the embedded PostgreSQL 17",
    );
  }
  return major;
}

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export async function listMigrations(): Promise<Migration[]> {
  const files = (await readdir(MIGRATIONS_DIR)).filter((file) => /^\d+_.+\.sql$/.test(file)).sort();
  return Promise.all(
    files.map(async (file) => ({
      version: Number(file.split("_")[0]),
      name: file,
      sql: await readFile(join(MIGRATIONS_DIR, file), "utf8"),
    })),
  );
}

/**
 * The versions recorded in `svc.schema_migrations`: migrate() skips them, and the daemon's doctor
 * probe compares them with listMigrations() to report pending ones. The table must exist.
 */
export async function appliedMigrationVersions(db: pg.ClientBase | pg.Pool): Promise<Set<number>> {
  const { rows } = await db.query<{ version: number }>("SELECT version FROM svc.schema_migrations");
  return new Set(rows.map((row) => row.version));
}

/**
 * Applies pending migrations, each in its own transaction, under a session advisory lock so
 * that processes starting at once take turns; re-running applies nothing.
 * Returns the names of the migrations this call applied.
 */
export async function migrate(pool: pg.Pool): Promise<string[]> {
  const client = await pool.connect();
  // held across statements: a connection the server drops meanwhile must fail the migration, not crash the process
  let lost: Error | undefined;
  const onError = (error: Error) => {
    lost = error;
  };
  client.on("error", onError);
  const applied: string[] = [];
  try {
    await assertServerVersion(client);
    await client.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK_KEY]);
    try {
      await client.query("CREATE SCHEMA IF NOT EXISTS svc");
      await client.query(`CREATE TABLE IF NOT EXISTS svc.schema_migrations (
        version    integer PRIMARY KEY,
        name       text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`);
      const done = await appliedMigrationVersions(client);
      for (const migration of await listMigrations()) {
        if (done.has(migration.version)) continue;
        await client.query("BEGIN");
        try {
          await client.query(migration.sql);
          await client.query("INSERT INTO svc.schema_migrations (version, name) VALUES ($1, $2)", [
            migration.version,
            migration.name,
          ]);
          await client.query("COMMIT");
          applied.push(migration.name);
        } catch (error) {
          await client.query("ROLLBACK");
          throw new Error(`migration ${migration.name} failed: ${(error as Error).message}`);
        }
      }
    } finally {
      await client.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK_KEY]);
    }
  } finally {
    client.off("error", onError);
    client.release(lost);
  }
  return applied;
}
