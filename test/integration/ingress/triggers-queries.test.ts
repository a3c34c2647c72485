import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createPool } from "../../../db/connect.ts";
import { migrate } from "../../../db/migrate.ts";
import {
  getTrigger,
  InvalidCursorError,
  insertTrigger,
  listTriggers,
  setTriggerStatuses,
} from "../../../db/triggers.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";

describe("db/triggers.ts", () => {
  let database: TestDatabase;
  let pool: ReturnType<typeof createPool>;
  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    pool = createPool(database.url);
    await migrate(pool);
  });
  afterAll(async () => {
    await pool?.end();
    await database?.drop();
  });

  it("lists newest first with status, code, source and since filters, and pages by cursor without gaps", async () => {
    const ids: string[] = [];
    for (let index = 0; index < 7; index++) {
      const { id } = await insertTrigger(pool, {
        kind: "webhook",
        source: index % 2 ? "odd" : "even",
        eventName: "e",
        deliveryId: `d-${index}`,
        payloadJson: JSON.stringify({ index }),
      });
      ids.push(id);
    }
    // equal timestamps, the case where a millisecond cursor would skip or repeat rows
    await pool.query(
      "UPDATE svc.triggers SET created_at = '2026-01-01T00:00:00.123456Z' WHERE id = ANY($1)",
      [ids.slice(2, 5)],
    );
    await setTriggerStatuses(pool, [
      { id: ids[1]!, status: "error", diagnostic: { code: "agent_timeout", message: "timed out" } },
      {
        id: ids[3]!,
        status: "discarded",
        diagnostic: { code: "unknown_agent_reference", message: "no agent x" },
      },
    ]);

    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await listTriggers(pool, { limit: 2, cursor });
      expect(page.triggers.length).toBeLessThanOrEqual(2);
      for (const trigger of page.triggers) expect(trigger).not.toHaveProperty("payload");
      seen.push(...page.triggers.map((t) => t.id));
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    expect([...seen].sort()).toEqual([...ids].sort());
    expect(new Set(seen).size).toBe(7);

    expect((await listTriggers(pool, { status: "error" })).triggers.map((t) => t.id)).toEqual([ids[1]]);
    expect((await listTriggers(pool, { code: "unknown_agent_reference" })).triggers.map((t) => t.id)).toEqual(
      [ids[3]],
    );
    expect((await listTriggers(pool, { source: "odd" })).triggers).toHaveLength(3);
    expect((await listTriggers(pool, { since: new Date("2026-06-01T00:00:00Z") })).triggers).toHaveLength(4);
    await expect(listTriggers(pool, { cursor: "bm90IGEgY3Vyc29y" })).rejects.toThrow(InvalidCursorError);

    const one = await getTrigger(pool, ids[1]!);
    expect(one).toMatchObject({
      id: ids[1],
      status: "error",
      diagnostic: { code: "agent_timeout", message: "timed out" },
      payload: { index: 1 },
    });
    expect(await getTrigger(pool, "trg_absent")).toBeUndefined();
  });
});
