import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { DISPATCH_QUEUE } from "../../../shared/queues.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { type ApiHarness, apiConfig, startApi, tokensBlock } from "./support.ts";

/** POST /schedules/:name/run and GET /schedules over the real app and database. */
let db: TestDatabase;
let api: ApiHarness;
const FIRER = "secret-firer";
const READER = "secret-reader";

beforeAll(async () => {
  db = await createTestDatabase(inject("adminDatabaseUrl"));
  api = await startApi(
    db.url,
    apiConfig({ tokens: tokensBlock({ firer: ["pipelines:invoke"], reader: ["triggers:read"] }) }),
  );
});

afterAll(async () => {
  await api?.close();
  await db?.drop();
});

interface Listed {
  name: string;
  pipeline: string;
  cron: string;
  timezone: string;
  args: Record<string, unknown>;
  catchUp: boolean;
  nextRun: string;
  lastRun: { at: string; trigger: string | null } | null;
}

async function listing(): Promise<Listed[]> {
  const response = await api.request("GET", "/schedules", { token: READER });
  expect(response.status).toBe(200);
  return ((await response.json()) as { schedules: Listed[] }).schedules;
}

describe("schedules over the daemon API", () => {
  it("lists every configured schedule with its next run and no last run yet", async () => {
    const before = Date.now();
    const schedules = await listing();
    expect(schedules.map((s) => [s.name, s.pipeline, s.cron, s.timezone])).toEqual([
      ["nightly", "nightly", "30 2 * * *", "Europe/Berlin"],
      ["nightly-2", "nightly", "0 12 * * 6", "UTC"],
      ["plain", "plain", "0 3 * * *", "UTC"],
    ]);
    for (const schedule of schedules) {
      expect(schedule.lastRun).toBeNull();
      const next = new Date(schedule.nextRun).getTime();
      expect(next).toBeGreaterThan(before);
      expect(next - before).toBeLessThanOrEqual(7 * 24 * 3_600_000);
    }
    const nightly = schedules[0]!;
    // 02:30 in Berlin is 00:30 or 01:30 UTC
    expect(nightly.nextRun).toMatch(/T0[01]:30:00\.000Z$/);
  });

  it("runs a schedule now with its args: a trigger of kind schedule and one dispatch job", async () => {
    const response = await api.request("POST", "/schedules/nightly-2/run", { token: FIRER, body: {} });
    expect(response.status).toBe(202);
    const { trigger } = (await response.json()) as { trigger: string };
    const { rows } = await api.pool.query(
      "SELECT kind, source, event_name, delivery_id, owner, payload FROM svc.triggers WHERE id = $1",
      [trigger],
    );
    expect(rows[0]).toMatchObject({
      kind: "schedule",
      source: "nightly-2",
      event_name: "schedule",
      delivery_id: null,
      owner: "token:firer",
      payload: { schedule: "nightly-2", cron: "0 12 * * 6", args: { label: "weekly", limit: 5 } },
    });
    expect(Date.parse(rows[0].payload.scheduled_for)).not.toBeNaN();
    const jobs = await api.pool.query(
      "SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1 AND data->>'triggerId' = $2",
      [DISPATCH_QUEUE, trigger],
    );
    expect(jobs.rows[0].n).toBe(1);

    const listed = (await listing()).find((s) => s.name === "nightly-2")!;
    expect(listed.lastRun?.trigger).toBe(trigger);
    // a run-now is no tick: it owes nothing to the schedule's catch-up bookkeeping
    const record = await api.pool.query(
      "SELECT last_scheduled_for FROM svc.schedules WHERE name = 'nightly-2'",
    );
    expect(record.rows[0].last_scheduled_for).toBeNull();
  });

  it("answers an unknown schedule 404 like an absent id, and stores nothing", async () => {
    const count = async () => (await api.pool.query("SELECT count(*)::int AS n FROM svc.triggers")).rows[0].n;
    const before = await count();
    // a pipeline without a schedule is no schedule either
    for (const name of ["no-such-schedule", "nightly-3"]) {
      const response = await api.request("POST", `/schedules/${name}/run`, { token: FIRER, body: {} });
      expect(response.status).toBe(404);
      expect(await response.json()).toEqual({ error: { code: "not_found", message: "no such schedule" } });
    }
    expect(await count()).toBe(before);
  });

  it("refuses a body with keys: a schedule runs with its configured args", async () => {
    const response = await api.request("POST", "/schedules/nightly/run", {
      token: FIRER,
      body: { args: { label: "other" } },
    });
    expect(response.status).toBe(400);
  });

  it("needs pipelines:invoke to run and triggers:read to list", async () => {
    expect((await api.request("POST", "/schedules/nightly/run", { token: READER, body: {} })).status).toBe(
      403,
    );
    expect((await api.request("GET", "/schedules", { token: FIRER })).status).toBe(403);
  });
});
