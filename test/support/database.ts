import { randomBytes } from "node:crypto";
import pg from "pg";

/** Every database this run creates starts with this, so teardown can drop leftovers of crashed files. */
export const RUN_PREFIX = `svc_test_${process.env.SVC_TEST_RUN_ID ?? process.ppid}_`;

export interface TestDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

/** A fresh, uniquely named database on the test server; drop it in afterAll. */
export async function createTestDatabase(adminUrl: string): Promise<TestDatabase> {
  const name = `${RUN_PREFIX}${randomBytes(5).toString("hex")}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  return {
    name,
    url: withDatabase(adminUrl, name),
    drop: () => dropDatabase(adminUrl, name),
  };
}

/** How long a drop waits for the test's own connections, closed just before, to be gone. */
const CLOSING_GRACE_MS = 2_000;

export async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    // a pool that was just ended may still be closing its sockets: terminating them then raises an
    // error in the test process that nothing listens to any more. FORCE is for what stays after.
    const deadline = Date.now() + CLOSING_GRACE_MS;
    while (Date.now() < deadline) {
      const { rows } = await admin.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1",
        [name],
      );
      if (rows[0]!.n === 0) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}

export async function dropDatabasesWithPrefix(adminUrl: string, prefix: string): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    const { rows } = await admin.query<{ datname: string }>(
      "SELECT datname FROM pg_database WHERE datname LIKE $1",
      [`${prefix.replace(/_/g, "\\_")}%`],
    );
    for (const { datname } of rows) await admin.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}
