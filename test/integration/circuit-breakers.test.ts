import type pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { listOpenBreakers, recordOutcome } from "../../db/circuit-breakers.ts";
import { createPool } from "../../db/connect.ts";
import { migrate } from "../../db/migrate.ts";
import { createTestDatabase, type TestDatabase } from "../support/database.ts";

const LIMITS = { failures: 3, cooldownMs: 60_000 };

/** The row's version and lock: an updated row gets a new xmin, a locked one a new xmax. */
async function rowVersion(pool: pg.Pool, pipeline: string): Promise<string | undefined> {
  const { rows } = await pool.query<{ version: string }>(
    "SELECT xmin::text || '/' || xmax::text AS version FROM svc.circuit_breakers WHERE pipeline = $1",
    [pipeline],
  );
  return rows[0]?.version;
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

  it("a success with nothing counted neither writes nor locks: a healthy pipeline's runs do not wait on each other or flush WAL for it", async () => {
    // no row yet: a success makes none
    expect(await recordOutcome(pool, "healthy", false, LIMITS)).toEqual({ opened: false, row: undefined });
    expect(await rowVersion(pool, "healthy")).toBeUndefined();
    // a failure counted, then a success resets it: the row exists with nothing counted
    await recordOutcome(pool, "healthy", true, LIMITS);
    expect((await recordOutcome(pool, "healthy", false, LIMITS)).row?.consecutive_failures).toBe(0);

    // another run's transaction holds the row: a success must not queue behind it
    const holder = await pool.connect();
    const counter = await pool.connect();
    try {
      await holder.query("BEGIN");
      await holder.query("SELECT 1 FROM svc.circuit_breakers WHERE pipeline = 'healthy' FOR UPDATE");
      // read after the holder's lock, which is itself a new xmax
      const before = await rowVersion(pool, "healthy");
      expect(before).toBeDefined();
      await counter.query("BEGIN");
      await counter.query("SET LOCAL lock_timeout = '500ms'");
      for (let i = 0; i < 3; i += 1)
        expect(await recordOutcome(counter, "healthy", false, LIMITS)).toEqual({
          opened: false,
          row: undefined,
        });
      // no transaction id taken: its commit writes no WAL record to flush
      const { rows } = await counter.query("SELECT pg_current_xact_id_if_assigned() AS xid");
      expect(rows[0].xid).toBeNull();
      await counter.query("COMMIT");
      expect(await rowVersion(pool, "healthy")).toBe(before);
    } finally {
      await counter.query("ROLLBACK").catch(() => {});
      await holder.query("ROLLBACK");
      counter.release();
      holder.release();
    }
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
