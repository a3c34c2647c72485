import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createPool } from "../../db/connect.ts";
import { withTransaction } from "../../db/transaction.ts";
import { createTestDatabase, type TestDatabase } from "../support/database.ts";

describe("withTransaction when the server drops the connection", () => {
  let database: TestDatabase;
  let admin: pg.Client;
  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
  });
  afterAll(async () => {
    await admin.end();
    await database.drop();
  });

  it("fails the transaction instead of crashing the process, and never reuses the dead connection", async () => {
    const pool = createPool(database.url, { max: 1 });
    let backend = 0;
    const attempt = withTransaction(pool, async (client) => {
      const { rows } = await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
      backend = rows[0]!.pid;
      // what a server restart does: terminate the session while we hold it between two statements
      await admin.query("SELECT pg_terminate_backend($1)", [backend]);
      await new Promise((settle) => setTimeout(settle, 300));
      await client.query("SELECT 1");
    });
    await expect(attempt).rejects.toThrow();
    const { rows } = await pool.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
    expect(rows[0]!.pid).not.toBe(backend);
    await pool.end();
  });
});
