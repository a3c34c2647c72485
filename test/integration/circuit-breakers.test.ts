import type pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { listOpenBreakers, recordOutcome } from "../../db/circuit-breakers.ts";
import { createPool } from "../../db/connect.ts";
import { migrate } from "../../db/migrate.ts";
import { createTestDatabase, type TestDatabase } from "../support/database.ts";

const LIMITS = { failures: 3, cooldownMs: 60_000 };

/** The row's version: Postgres gives an updated row a new xmin, so an unchanged one was not written. */
async function rowVersion(pool: pg.Pool, pipeline: string): Promise<string | undefined> {
  const { rows } = await pool.query<{ xmin: string }>(
    "SELECT xmin::text FROM svc.circuit_breakers WHERE pipeline = $1",
    [pipeline],
  );
  return rows[0]?.xmin;
}

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

  it("a success with nothing counted writes no row: a healthy pipeline's runs cost it no WAL flush", async () => {
    expect(await recordOutcome(pool, "healthy", false, LIMITS)).toMatchObject({ opened: false });
    const first = await rowVersion(pool, "healthy");
    expect(first).toBeDefined();
    for (let i = 0; i < 3; i += 1)
      expect(await recordOutcome(pool, "healthy", false, LIMITS)).toEqual({ opened: false, row: undefined });
    expect(await rowVersion(pool, "healthy")).toBe(first);
  });

  it("failures count, a success resets them, and the failure that reaches the limit opens it once", async () => {
    await recordOutcome(pool, "flaky", true, LIMITS);
    const counted = await recordOutcome(pool, "flaky", true, LIMITS);
    expect(counted.row?.consecutive_failures).toBe(2);
    const reset = await recordOutcome(pool, "flaky", false, LIMITS);
    expect(reset.row?.consecutive_failures).toBe(0);
    for (let i = 0; i < 2; i += 1)
      expect((await recordOutcome(pool, "flaky", true, LIMITS)).opened).toBe(false);
    const opening = await recordOutcome(pool, "flaky", true, LIMITS);
    expect(opening.opened).toBe(true);
    expect(opening.row?.open_until).toBeInstanceOf(Date);
    const openUntil = async () =>
      (await listOpenBreakers(pool)).find((b) => b.pipeline === "flaky")?.open_until;
    expect(await openUntil()).toEqual(opening.row?.open_until);
    // a success while it is open writes nothing either: the cooldown still runs out on its own
    expect((await recordOutcome(pool, "flaky", false, LIMITS)).row).toBeUndefined();
    expect(await openUntil()).toEqual(opening.row?.open_until);
  });
});
