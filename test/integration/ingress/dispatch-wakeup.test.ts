import pg from "pg";
import type { PgBoss } from "pg-boss";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { NOTIFY_CHANNEL, startBoss } from "../../../db/boss.ts";
import { createPool } from "../../../db/connect.ts";
import { migrate } from "../../../db/migrate.ts";
import { recordTrigger } from "../../../db/record-trigger.ts";
import { announceTrigger, parseAnnouncement, TRIGGER_CHANNEL } from "../../../db/trigger-announcements.ts";
import { DISPATCH_QUEUE } from "../../../shared/queues.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";

/**
 * How the ingress wakes the workers for a stored trigger: an announcement naming it (see
 * db/trigger-announcements.ts), heard by a real LISTEN connection.
 */
describe("dispatch wake-up: trigger announcements", () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  let boss: PgBoss;
  let listener: pg.Client;
  /** every notification on both channels, in the order Postgres delivered them */
  const heard: { channel: string; payload: string }[] = [];
  let onHeard: (() => void) | undefined;

  const hook = (n: number) => ({
    kind: "webhook" as const,
    source: "hook",
    eventName: "hook",
    deliveryId: null,
    payloadJson: JSON.stringify({ n }),
  });

  let sentinels = 0;
  /**
   * Sends a NOTIFY of our own and returns what was heard before it: a NOTIFY committed before it
   * cannot arrive after it.
   */
  const heardUpToNow = async () => {
    sentinels += 1;
    const sentinel = `sentinel-${sentinels}`;
    const reached = new Promise<void>((resolve) => {
      onHeard = () => {
        if (heard.some((entry) => entry.payload === sentinel)) resolve();
      };
    });
    await pool.query("SELECT pg_notify($1, $2)", [TRIGGER_CHANNEL, sentinel]);
    await reached;
    const before = heard.splice(0, heard.findIndex((entry) => entry.payload === sentinel) + 1);
    return before.slice(0, -1).filter((entry) => !entry.payload.startsWith("sentinel-"));
  };

  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    pool = createPool(database.url);
    await migrate(pool);
    boss = await startBoss({ url: database.url, max: 2, supervise: false });
    listener = new pg.Client({ connectionString: database.url });
    await listener.connect();
    listener.on("notification", (message) => {
      heard.push({ channel: message.channel, payload: message.payload ?? "" });
      onHeard?.();
    });
    await listener.query(`LISTEN ${TRIGGER_CHANNEL}`);
    await listener.query(`LISTEN "${NOTIFY_CHANNEL}"`);
  });

  afterAll(async () => {
    await listener?.end();
    await boss?.stop({ graceful: false, close: true });
    await pool?.end();
    await database?.drop();
  });

  it("announces a trigger recorded alone with its commit, naming the trigger, its job, kind, source and event name", async () => {
    // the queue itself carries no pg-boss notify: its in-transaction NOTIFY on every send would
    // serialise concurrent commits
    expect((await boss.getQueue(DISPATCH_QUEUE))?.notify).toBe(false);
    const arrived = new Promise<{ payload: string; visible: boolean }>((resolve) => {
      onHeard = () => {
        const last = heard.at(-1)!;
        // what a worker hearing it can see at that moment, from another connection
        void pool
          .query(
            `SELECT (SELECT count(*) FROM svc.triggers WHERE id = $1)::int
                  + (SELECT count(*) FROM pgboss.job WHERE id = $2::uuid AND state = 'created')::int AS n`,
            [parseAnnouncement(last.payload)?.triggerId, parseAnnouncement(last.payload)?.jobId],
          )
          .then(({ rows }) => resolve({ payload: last.payload, visible: rows[0].n === 2 }));
      };
    });
    const { id } = await recordTrigger(pool, boss, hook(1));
    const { payload, visible } = await arrived;
    const announcement = parseAnnouncement(payload)!;
    expect(announcement).toMatchObject({ triggerId: id, kind: "webhook", source: "hook", eventName: "hook" });
    const { rows } = await pool.query("SELECT id FROM pgboss.job WHERE data->>'triggerId' = $1", [id]);
    expect(rows.map((row) => row.id)).toEqual([announcement.jobId]);
    expect(visible).toBe(true);
    expect((await heardUpToNow()).map((entry) => entry.channel)).toEqual([TRIGGER_CHANNEL]);
  });

  it("announces nothing for a trigger whose transaction rolled back", async () => {
    await heardUpToNow();
    // a job the queue cannot take: the trigger's INSERT, NOTIFY included, goes with the rollback
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

  it("announces every trigger of a burst; while an announcement is on its way, the next falls back to one wake-up of the queue", async () => {
    await heardUpToNow();
    const ids = (await Promise.all([3, 4, 5, 6].map((n) => recordTrigger(pool, boss, hook(n))))).map(
      (r) => r.id,
    );
    // the ones announced after their commit may still be on their way when recordTrigger returns
    const announced = new Set<string>();
    let wokeQueue = false;
    for (
      let attempt = 0;
      attempt < 200 && !(announced.size === ids.length || (wokeQueue && announced.size > 0));
      attempt += 1
    ) {
      for (const entry of heard.splice(0)) {
        if (entry.channel === NOTIFY_CHANNEL && entry.payload === DISPATCH_QUEUE) wokeQueue = true;
        const id = parseAnnouncement(entry.payload)?.triggerId;
        if (id) announced.add(id);
      }
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    // each is announced, inside its commit or right after it, unless the queue was woken for it
    for (const id of announced) expect(ids).toContain(id);
    if (!wokeQueue) expect([...announced].sort()).toEqual([...ids].sort());
    else expect(announced.size).toBeGreaterThanOrEqual(1);

    await new Promise((resolve) => setTimeout(resolve, 200));
    await heardUpToNow();
    const announcement = {
      jobId: "00000000-0000-4000-8000-000000000000",
      kind: "webhook",
      source: "hook",
      eventName: "hook",
    };
    announceTrigger(boss, { ...announcement, triggerId: "trg_first" });
    announceTrigger(boss, { ...announcement, triggerId: "trg_second" });
    const next = await waitForHeard(2);
    // two NOTIFYs on two connections: either may commit first
    expect(
      next
        .map((entry) => [entry.channel, parseAnnouncement(entry.payload)?.triggerId ?? entry.payload])
        .sort(),
    ).toEqual(
      [
        [TRIGGER_CHANNEL, "trg_first"],
        [NOTIFY_CHANNEL, DISPATCH_QUEUE],
      ].sort(),
    );
  });

  async function waitForHeard(count: number) {
    for (let attempt = 0; attempt < 200 && heard.length < count; attempt += 1)
      await new Promise((resolve) => setTimeout(resolve, 25));
    return heard.splice(0);
  }
});
