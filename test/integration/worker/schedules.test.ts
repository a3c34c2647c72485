import type pg from "pg";
import type { PgBoss } from "pg-boss";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ensureQueue, startBoss } from "../../../db/boss.ts";
import { createPool } from "../../../db/connect.ts";
import { migrate } from "../../../db/migrate.ts";
import { fireSchedule } from "../../../db/schedules.ts";
import type { Schedule } from "../../../shared/config/types.ts";
import { latestFiring } from "../../../shared/schedule-time.ts";
import { SCHEDULE_QUEUE, startSchedules } from "../../../worker/queue/schedules.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { captureLogger, makeConfig, pipeline, waitFor } from "./helpers.ts";

/** The worker's side of schedules against real Postgres and pg-boss, without a clock to wait for. */
let db: TestDatabase;
let pool: pg.Pool;
let boss: PgBoss;

beforeAll(async () => {
  db = await createTestDatabase(inject("adminDatabaseUrl"));
  pool = createPool(db.url, { max: 12 });
  await migrate(pool);
  boss = await startBoss({ url: db.url, max: 4, supervise: false });
});

afterAll(async () => {
  await boss?.stop({ graceful: false });
  await pool?.end();
  await db?.drop();
});

function schedule(name: string, cron: string, catchUp = false): Schedule {
  return { name, pipeline: "report", cron, timezone: "UTC", args: { label: "x" }, catchUp };
}

function configWith(schedules: Schedule[]) {
  return makeConfig("/nonexistent", {
    pipelines: {
      report: pipeline("report", {
        args: { label: { type: "string", required: true } },
        trigger: { webhook: [], codehost: [], tracker: [], schedule: schedules },
      }),
    },
  });
}

async function ticks(name: string): Promise<{ delivery_id: string; payload: Record<string, unknown> }[]> {
  const { rows } = await pool.query(
    "SELECT delivery_id, payload FROM svc.triggers WHERE kind = 'schedule' AND source = $1 ORDER BY delivery_id",
    [name],
  );
  return rows;
}

describe("firing a tick", () => {
  it("fires once however many workers fire the same tick at the same moment", async () => {
    const tick = new Date("2026-03-01T03:00:00Z");
    const s = schedule("race", "0 3 * * *");
    const results = await Promise.all(
      Array.from({ length: 10 }, () => fireSchedule(pool, boss, s, { scheduledFor: tick })),
    );
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(new Set(results.map((r) => r.id)).size).toBe(1);
    const fired = await ticks("race");
    expect(fired).toEqual([
      {
        delivery_id: "2026-03-01T03:00:00.000Z",
        payload: {
          schedule: "race",
          cron: "0 3 * * *",
          scheduled_for: "2026-03-01T03:00:00.000Z",
          args: { label: "x" },
        },
      },
    ]);
    const jobs = await pool.query(
      "SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'svc-dispatch' AND data->>'triggerId' = $1",
      [results[0]!.id],
    );
    expect(jobs.rows[0].n).toBe(1);
  });
});

describe("starting the schedules of a worker", () => {
  it("registers the configured schedules with pg-boss, unschedules the others, and catches up only where asked", async () => {
    await ensureQueue(boss, SCHEDULE_QUEUE, { notify: false });
    await boss.schedule(SCHEDULE_QUEUE, "0 1 * * *", { schedule: "gone" }, { key: "gone" });
    // a minute of the hour at least ten minutes back: never due now, so only a catch-up fires it
    const minute = new Date(Date.now() - 10 * 60_000).getUTCMinutes();
    const cron = `${minute} * * * *`;
    const eager = schedule("eager", cron, true);
    const lazy = schedule("lazy", cron, false);
    const fresh = schedule("fresh", cron, true);
    const every = schedule("every", "* * * * *");
    // eager and lazy were registered two hours ago by a worker that has since stopped, like every other
    await pool.query(
      `INSERT INTO svc.schedules (name, pipeline, cron, timezone, registered_at)
       VALUES ('eager', 'report', $1, 'UTC', now() - interval '2 hours'),
              ('lazy', 'report', $1, 'UTC', now() - interval '2 hours')`,
      [cron],
    );
    const { logger } = captureLogger();
    const config = configWith([eager, lazy, fresh, every]);
    const running = await startSchedules({ config, databaseUrl: db.url, pool, boss, logger, env: {} });
    try {
      const registered = await boss.getSchedules(SCHEDULE_QUEUE);
      expect(registered.map((s) => [s.key, s.cron, s.timezone]).sort()).toEqual([
        ["eager", cron, "UTC"],
        ["every", "* * * * *", "UTC"],
        ["fresh", cron, "UTC"],
        ["lazy", cron, "UTC"],
      ]);
      const expected = latestFiring(cron, "UTC", new Date(), new Date(Date.now() - 2 * 3_600_000))!;
      expect((await ticks("eager")).map((t) => t.delivery_id)).toEqual([expected.toISOString()]);
      // no catch_up: missed ticks are not replayed; a schedule new to the database owes nothing
      expect(await ticks("lazy")).toEqual([]);
      expect(await ticks("fresh")).toEqual([]);
      const record = await pool.query("SELECT last_scheduled_for FROM svc.schedules WHERE name = 'eager'");
      expect(record.rows[0].last_scheduled_for.toISOString()).toBe(expected.toISOString());

      // a job of the queue fires the latest tick before its creation, once; an old tick is not replayed
      const sent = Date.now();
      const jobs = [
        await boss.send(SCHEDULE_QUEUE, { schedule: "every" }),
        await boss.send(SCHEDULE_QUEUE, { schedule: "lazy" }),
      ];
      for (const job of jobs)
        await waitFor(
          async () => (await boss.getJobById(SCHEDULE_QUEUE, job!))?.state === "completed",
          "the schedule job to complete",
        );
      const everyTicks = (await ticks("every")).map((t) => Date.parse(t.delivery_id));
      expect(everyTicks.length).toBeGreaterThanOrEqual(1);
      const latest = everyTicks.at(-1)!;
      expect(latest % 60_000).toBe(0);
      expect(latest).toBeLessThanOrEqual(sent + 1_000);
      expect(sent - latest).toBeLessThan(90_000);
      expect(await ticks("lazy")).toEqual([]);
    } finally {
      await running.close();
    }
    // a second start has nothing more to catch up on
    const again = await startSchedules({ config, databaseUrl: db.url, pool, boss, logger, env: {} });
    await again.close();
    expect(await ticks("eager")).toHaveLength(1);
  });

  it("a worker with no schedules configured unschedules what an earlier configuration left", async () => {
    const { logger } = captureLogger();
    const running = await startSchedules({
      config: configWith([]),
      databaseUrl: db.url,
      pool,
      boss,
      logger,
      env: {},
    });
    await running.close();
    expect(await boss.getSchedules(SCHEDULE_QUEUE)).toEqual([]);
    expect((await pool.query("SELECT count(*)::int AS n FROM svc.schedules")).rows[0].n).toBe(0);
  });

  it("refuses a cron check interval outside pg-boss's 1-45 seconds", async () => {
    const { logger } = captureLogger();
    await expect(
      startSchedules({
        config: configWith([]),
        databaseUrl: db.url,
        pool,
        boss,
        logger,
        env: { SVC_SCHEDULE_CHECK_SECONDS: "0.5" },
      }),
    ).rejects.toThrow("SVC_SCHEDULE_CHECK_SECONDS must be a whole number of seconds from 1 to 45");
  });
});
