import type pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { countFailure, listOpenBreakers } from "../../db/circuit-breakers.ts";
import { createPool } from "../../db/connect.ts";
import { migrate } from "../../db/migrate.ts";
import { createTestDatabase, type TestDatabase } from "../support/database.ts";

const LIMITS = { failures: 3, cooldownMs: 60_000 };

describe("the circuit breaker's count (db/circuit-breakers.ts)", () => {
  let database: TestDatabase;
  let pool: pg.Pool;

  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    pool = createPool(database.url);
    await migrate(pool);
  });

  afterAll(async () => {
    await pool?.end();
    await database?.drop();
  });

  it("failures count, and the failure that reaches the limit opens it once, resetting the count", async () => {
    await countFailure(pool, "flaky", LIMITS);
    const counted = await countFailure(pool, "flaky", LIMITS);
    expect(counted).toMatchObject({ opened: false, row: { consecutive_failures: 2 } });
    const opening = await countFailure(pool, "flaky", LIMITS);
    expect(opening.opened).toBe(true);
    expect(opening.row.consecutive_failures).toBe(0);
    expect(opening.row.open_until).toBeInstanceOf(Date);
    const openUntil = async () =>
      (await listOpenBreakers(pool)).find((b) => b.pipeline === "flaky")?.open_until;
    expect(await openUntil()).toEqual(opening.row.open_until);
    // a failure while it is open counts, but does not open it again or move its end
    expect((await countFailure(pool, "flaky", LIMITS)).opened).toBe(false);
    expect(await openUntil()).toEqual(opening.row.open_until);
  });
});
