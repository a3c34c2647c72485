import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startBoss } from "../../../db/boss.ts";
import { createPool } from "../../../db/connect.ts";
import { migrate } from "../../../db/migrate.ts";
import { recordTrigger } from "../../../db/record-trigger.ts";
import { DISPATCH_QUEUE, type DispatchJob } from "../../../shared/queues.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";

describe("dispatch wake-up", () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
  });
  afterAll(async () => {
    await database?.drop();
  });

  it("sends no NOTIFY inside the transaction, and still wakes a LISTENing worker right after the commit", async () => {
    const pool = createPool(database.url);
    await migrate(pool);
    const producer = await startBoss({ url: database.url, max: 2, supervise: false });
    // the queue carries no pg-boss notify: its in-transaction NOTIFY would serialise commits
    expect((await producer.getQueue(DISPATCH_QUEUE))?.notify).toBe(false);
    const consumer = await startBoss({ url: database.url, max: 2, listen: true });
    const received: string[] = [];
    const waiters: (() => void)[] = [];
    // polling an hour apart: a job that arrives within the test's time was delivered by the NOTIFY
    await consumer.work<DispatchJob>(
      DISPATCH_QUEUE,
      { pollingIntervalSeconds: 3600, notifyPollingIntervalSeconds: 3600 },
      async (jobs) => {
        for (const job of jobs) received.push(job.data.triggerId);
        for (const wake of waiters.splice(0)) wake();
      },
    );
    const next = (count: number) =>
      new Promise<void>((resolve) => {
        const check = () => (received.length >= count ? resolve() : waiters.push(check));
        check();
      });
    const first = await recordTrigger(pool, producer, {
      kind: "webhook",
      source: "hook",
      eventName: "hook",
      deliveryId: null,
      payloadJson: "{}",
    });
    await next(1);
    const second = await recordTrigger(pool, producer, {
      kind: "webhook",
      source: "hook",
      eventName: "hook",
      deliveryId: null,
      payloadJson: "{}",
    });
    await next(2);
    expect(received).toEqual([first.id, second.id]);
    await consumer.stop({ graceful: false, close: true });
    await producer.stop({ graceful: false, close: true });
    await pool.end();
  });
});
