import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startBoss, transactionDb } from "../../db/boss.ts";
import { createPool } from "../../db/connect.ts";
import { assertServerVersion, listMigrations, migrate } from "../../db/migrate.ts";
import { DISPATCH_QUEUE } from "../../shared/queues.ts";
import { createTestDatabase, type TestDatabase } from "../support/database.ts";

describe("migrations", () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
  });
  afterAll(async () => {
    await database.drop();
  });

  it("apply once when several processes start at the same time, then change nothing", async () => {
    const pools = [createPool(database.url), createPool(database.url), createPool(database.url)];
    const results = await Promise.all(pools.map((pool) => migrate(pool)));
    const all = (await listMigrations()).map((m) => m.name);
    expect(results.flat().sort()).toEqual(all.sort());
    expect(await migrate(pools[0]!)).toEqual([]);
    const { rows } = await pools[0]!.query("SELECT count(*)::int AS n FROM svc.schema_migrations");
    expect(rows[0].n).toBe(all.length);
    const { rows: columns } = await pools[0]!.query(
      "SELECT column_name FROM information_schema.columns WHERE table_schema = 'svc' AND table_name = 'credential_cooldowns'",
    );
    expect(columns.map((c) => c.column_name)).toContain("dead_at");
    await Promise.all(pools.map((pool) => pool.end()));
  });

  it("accepts the server's version (15 or later)", async () => {
    const pool = createPool(database.url);
    expect(await assertServerVersion(pool)).toBeGreaterThanOrEqual(15);
    await pool.end();
  });

  it("sends a pg-boss job inside our own transaction, so a rollback leaves no job", async () => {
    const pool = createPool(database.url);
    await migrate(pool);
    const boss = await startBoss({ url: database.url });
    const client = await pool.connect();
    await client.query("BEGIN");
    await boss.send(DISPATCH_QUEUE, { triggerId: "trg_rolledback" }, { db: transactionDb(client) });
    await client.query("ROLLBACK");
    await client.query("BEGIN");
    await boss.send(DISPATCH_QUEUE, { triggerId: "trg_committed" }, { db: transactionDb(client) });
    await client.query("COMMIT");
    client.release();
    const { rows } = await pool.query("SELECT data->>'triggerId' AS id FROM pgboss.job WHERE name = $1", [
      DISPATCH_QUEUE,
    ]);
    expect(rows.map((r) => r.id)).toEqual(["trg_committed"]);
    await boss.stop({ graceful: false });
    await pool.end();
  });
});
