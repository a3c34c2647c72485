import pg from "pg";
import type { PgBoss } from "pg-boss";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startBoss, WAKE_CHANNEL } from "../../../db/boss.ts";
import { createPool } from "../../../db/connect.ts";
import { migrate } from "../../../db/migrate.ts";
import { recordTrigger } from "../../../db/record-trigger.ts";
import { DISPATCH_QUEUE } from "../../../shared/queues.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { waitFor } from "../../support/wait-for.ts";

/** How the ingress wakes the workers for a stored trigger, heard by a real LISTEN connection. */
describe("dispatch wake-up", () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  let boss: PgBoss;
  let listener: pg.Client;
  /** every notification, in the order Postgres delivered them */
  const heard: string[] = [];
  let onHeard: (() => void) | undefined;

  const hook = (n: number) => ({
    kind: "webhook" as const,
    source: "hook",
    eventName: "hook",
    deliveryId: null,
    payloadJson: JSON.stringify({ n }),
  });

  let sentinels = 0;
  /** Sends a NOTIFY of our own and returns what was heard before it (one committed earlier cannot arrive after it). */
  const heardUpToNow = async () => {
    sentinels += 1;
    const sentinel = `sentinel-${sentinels}`;
    const reached = new Promise<void>((resolve) => {
      onHeard = () => {
        if (heard.includes(sentinel)) resolve();
      };
    });
    await pool.query("SELECT pg_notify($1, $2)", [WAKE_CHANNEL, sentinel]);
    await reached;
    const before = heard.splice(0, heard.indexOf(sentinel) + 1);
    return before.slice(0, -1).filter((payload) => !payload.startsWith("sentinel-"));
  };

  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    pool = createPool(database.url);
    await migrate(pool);
    boss = await startBoss({ url: database.url, max: 2, supervise: false });
    listener = new pg.Client({ connectionString: database.url });
    await listener.connect();
    listener.on("notification", (message) => {
      heard.push(message.payload ?? "");
      onHeard?.();
    });
    await listener.query(`LISTEN ${WAKE_CHANNEL}`);
  });

  afterAll(async () => {
    await listener?.end();
    await boss?.stop({ graceful: false, close: true });
    await pool?.end();
    await database?.drop();
  });

  it("wakes the dispatch queue after the commit: the trigger and its job are visible to whoever hears it", async () => {
    // the queue itself carries no pg-boss notify: its in-transaction NOTIFY on every send would
    // serialise concurrent commits
    expect((await boss.getQueue(DISPATCH_QUEUE))?.notify).toBe(false);
    let triggerId = "";
    const arrived = new Promise<number>((resolve) => {
      onHeard = () => {
        if (heard.at(-1) !== DISPATCH_QUEUE) return;
        // what a worker hearing it can see at that moment, from another connection
        void pool
          .query("SELECT payload->>'n' AS n FROM svc.triggers ORDER BY created_at DESC LIMIT 1")
          .then(async ({ rows }) => {
            const jobs = await boss.findJobs(DISPATCH_QUEUE, { data: { triggerId }, queued: true });
            resolve(rows[0]?.n === "1" ? jobs.length : -1);
          });
      };
    });
    triggerId = (await recordTrigger(pool, boss, hook(1))).id;
    expect(await arrived).toBe(1);
    expect(await heardUpToNow()).toEqual([DISPATCH_QUEUE]);
  });

  it("wakes nobody for a trigger whose transaction rolled back, and stores nothing", async () => {
    await heardUpToNow();
    await pool.query(`CREATE FUNCTION public.refuse_job() RETURNS trigger LANGUAGE plpgsql AS
      $$ BEGIN RAISE EXCEPTION 'no jobs today'; END $$`);
    await pool.query(
      "CREATE TRIGGER refuse_job BEFORE INSERT ON pgboss.job FOR EACH ROW EXECUTE FUNCTION public.refuse_job()",
    );
    try {
      await expect(recordTrigger(pool, boss, hook(2))).rejects.toThrow(/no jobs today/);
    } finally {
      await pool.query("DROP TRIGGER refuse_job ON pgboss.job");
    }
    expect(await heardUpToNow()).toEqual([]);
    const { rows } = await pool.query(
      "SELECT count(*)::int AS n FROM svc.triggers WHERE payload->>'n' = '2'",
    );
    expect(rows[0].n).toBe(0);
  });

  it("coalesces a burst into fewer wake-ups, the last one sent after the last commit", async () => {
    await heardUpToNow();
    // Hold the first wake-up's NOTIFY in flight until the whole burst has committed, so the test
    // does not depend on how fast this machine commits: both of the boss's connections wait on an
    // advisory lock this test holds, and the first NOTIFY queues behind them.
    const holder = await pool.connect();
    const held = [] as Promise<unknown>[];
    try {
      await holder.query("SELECT pg_advisory_lock(4242)");
      for (let i = 0; i < 2; i += 1) {
        held.push(boss.getDb().executeSql("SELECT pg_advisory_xact_lock_shared(4242)"));
      }
      await waitFor(async () => {
        const { rows } = await pool.query(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND wait_event = 'advisory'",
        );
        return rows[0].n === 2;
      }, "both of the boss's connections to wait on the lock");
      const burst = [3, 4, 5, 6, 7, 8, 9, 10];
      await Promise.all(burst.map((n) => recordTrigger(pool, boss, hook(n))));
      expect(heard).toEqual([]);
    } finally {
      await holder.query("SELECT pg_advisory_unlock(4242)");
      holder.release();
      await Promise.all(held);
    }
    // the first NOTIFY, then exactly one follow-up for the seven calls made while it was in flight
    await waitFor(
      async () => heard.filter((payload) => payload === DISPATCH_QUEUE).length >= 2,
      "the first wake-up and its follow-up",
    );
    expect(await heardUpToNow()).toEqual([DISPATCH_QUEUE, DISPATCH_QUEUE]);
  });
});
