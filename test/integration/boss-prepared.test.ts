import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { PREPARED_TEXTS, transactionDb } from "../../db/boss.ts";
import { createTestDatabase, type TestDatabase } from "../support/database.ts";

/**
 * transactionDb with `prepare`: pg-boss's job calls on a run's path run as named statements, so
 * Postgres parses and plans each text once per connection; past PREPARED_TEXTS distinct texts a
 * statement runs unnamed, so a text that varied with its input cannot fill the server's memory.
 */
describe("transactionDb: prepared pg-boss statements", () => {
  let database: TestDatabase;
  let client: pg.Client;
  const prepared = async () =>
    (await client.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_prepared_statements")).rows[0]!.n;

  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    client = new pg.Client({ connectionString: database.url });
    await client.connect();
  });
  afterAll(async () => {
    await client.end();
    await database.drop();
  });

  it("runs a text unnamed without prepare, and prepares it once with it", async () => {
    const text = "SELECT $1::int + 1 AS n";
    expect((await transactionDb(client).executeSql(text, [1])).rows).toEqual([{ n: 2 }]);
    expect(await prepared()).toBe(0);
    const db = transactionDb(client, { prepare: true });
    expect((await db.executeSql(text, [2])).rows).toEqual([{ n: 3 }]);
    expect((await db.executeSql(text, [3])).rows).toEqual([{ n: 4 }]);
    expect(await prepared()).toBe(1);
  });

  it(`prepares no more than ${PREPARED_TEXTS} texts, and answers every statement past them`, async () => {
    const db = transactionDb(client, { prepare: true });
    for (let i = 0; i < PREPARED_TEXTS + 50; i += 1) {
      const { rows } = await db.executeSql(`SELECT $1::int + ${i} AS n`, [1]);
      expect(rows).toEqual([{ n: 1 + i }]);
    }
    expect(await prepared()).toBe(PREPARED_TEXTS);
  });
});
