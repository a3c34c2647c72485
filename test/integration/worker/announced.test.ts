import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import type pg from "pg";
import type { PgBoss } from "pg-boss";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startBoss, transactionDb } from "../../../db/boss.ts";
import { createPool } from "../../../db/connect.ts";
import { migrate } from "../../../db/migrate.ts";
import { recordTrigger } from "../../../db/record-trigger.ts";
import { withTransaction } from "../../../db/transaction.ts";
import { announcementPayload, TRIGGER_CHANNEL } from "../../../db/trigger-announcements.ts";
import { lockTrigger } from "../../../db/trigger-status.ts";
import { insertTrigger } from "../../../db/triggers.ts";
import type { ConfigSnapshot } from "../../../shared/config/types.ts";
import { DISPATCH_QUEUE, type DispatchJob } from "../../../shared/queues.ts";
import { type RunningWorker, startWorker } from "../../../worker/worker.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { captureLogger, configDir, lineage, makeConfig, pipeline, waitForTrigger } from "./helpers.ts";

/**
 * Triggers announced by the ingress (db/trigger-announcements.ts) are dispatched without their job
 * being fetched: in one statement when the announcement decides the pipeline, in one transaction
 * otherwise. Real Postgres, real worker processes' code in this process, real shells.
 */
describe("worker: announced triggers", () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  let boss: PgBoss;
  let config: ConfigSnapshot;
  let dir: string;
  const workers: RunningWorker[] = [];
  const first = captureLogger();
  const second = captureLogger();

  /** one line per step that ran: the pipeline and the payload's `n` */
  const ranLog = () => join(dir, "ran.log");
  const step = (name: string) => ({
    run: `printf '%s %s\\n' ${name} "$(printf '%s' "$PAYLOAD_JSON" | sed 's/.*"n":\\([0-9]*\\).*/\\1/')" >> "${ranLog()}"`,
  });
  const ran = async () => (await readFile(ranLog(), "utf8").catch(() => "")).split("\n").filter(Boolean);

  const job = async (triggerId: string) =>
    (
      await pool.query(
        "SELECT id, state, started_on FROM pgboss.job WHERE name = $1 AND data->>'triggerId' = $2",
        [DISPATCH_QUEUE, triggerId],
      )
    ).rows[0];

  /** A trigger and its job as the ingress stores them, but announced by nobody. */
  const storeQuietly = (source: string, n: number) =>
    withTransaction(pool, async (client) => {
      const { id } = await insertTrigger(client, {
        kind: "webhook",
        source,
        eventName: source,
        deliveryId: null,
        payloadJson: JSON.stringify({ n }),
      });
      const jobId = await boss.send(DISPATCH_QUEUE, { triggerId: id } satisfies DispatchJob, {
        db: transactionDb(client),
      });
      return { id, jobId: jobId! };
    });

  /** An announcement as the ingress sends it, of a webhook on `source`. */
  const announce = (triggerId: string, jobId: string, source: string) =>
    pool.query("SELECT pg_notify($1, $2)", [
      TRIGGER_CHANNEL,
      announcementPayload({ triggerId, jobId, kind: "webhook", source, eventName: source }),
    ]);

  const record = async (source: string, n: number) =>
    (
      await recordTrigger(pool, boss, {
        kind: "webhook",
        source,
        eventName: source,
        deliveryId: null,
        payloadJson: JSON.stringify({ n }),
      })
    ).id;

  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    pool = createPool(database.url);
    await migrate(pool);
    dir = await configDir();
    config = makeConfig(dir, {
      pipelines: {
        stamp: pipeline("stamp", {
          trigger: { webhook: ["one-hook"], codehost: [], tracker: [] },
          setup: [step("stamp")],
        }),
        other: pipeline("other", {
          trigger: { webhook: ["other-hook"], codehost: [], tracker: [] },
          setup: [step("other")],
        }),
        "twin-a": pipeline("twin-a", {
          trigger: { webhook: ["two-hook"], codehost: [], tracker: [] },
          setup: [step("twin-a")],
        }),
        "twin-b": pipeline("twin-b", {
          trigger: { webhook: ["two-hook"], codehost: [], tracker: [] },
          setup: [step("twin-b")],
        }),
      },
    });
    boss = await startBoss({ url: database.url, supervise: false });
    workers.push(await startWorker({ config, databaseUrl: database.url, logger: first.logger }));
    // past the worker's first look at every queue, which could fetch the first job before the
    // announcement is heard (its backstop poll comes again only a second later)
    await new Promise((resolve) => setTimeout(resolve, 300));
  });

  afterAll(async () => {
    for (const worker of workers) await worker.stop(1_000);
    await boss?.stop({ graceful: false });
    await pool?.end();
    await database?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("claims a trigger whose announcement decides its one pipeline in one statement: its job is never fetched, its step runs once", async () => {
    const id = await record("one-hook", 1);
    expect((await waitForTrigger(pool, id)).status).toBe("completed");
    const { workloads, invocations } = await lineage(pool, id);
    expect(workloads.map((w) => w.pipeline)).toEqual(["stamp"]);
    expect(invocations.map((i) => [i.status, i.attempts])).toEqual([["completed", 1]]);
    expect(first.lines.some((line) => line.includes('"dispatch.claimed_announced"'))).toBe(true);
    // completed by the worker that claimed it, straight from `created`: nobody fetched it
    await waitForJob(id, "completed");
    expect((await job(id)).started_on).toBeNull();
    expect(await ran()).toEqual(["stamp 1"]);
  });

  it("dispatches a trigger that fires two pipelines from its announcement in one transaction, each pipeline once", async () => {
    const id = await record("two-hook", 2);
    expect((await waitForTrigger(pool, id)).status).toBe("completed");
    const { workloads, invocations } = await lineage(pool, id);
    expect(workloads.map((w) => w.pipeline).sort()).toEqual(["twin-a", "twin-b"]);
    expect(invocations.map((i) => i.status)).toEqual(["completed", "completed"]);
    await waitForJob(id, "completed");
    expect((await job(id)).started_on).toBeNull();
    expect((await ran()).filter((line) => line.endsWith(" 2")).sort()).toEqual(["twin-a 2", "twin-b 2"]);
  });

  it("claims nothing for an announcement its trigger does not match; the job dispatches the trigger as stored", async () => {
    const { id, jobId } = await storeQuietly("one-hook", 3);
    // names a route with a pipeline of its own, which the stored trigger did not come from
    await announce(id, jobId, "other-hook");
    expect((await waitForTrigger(pool, id)).status).toBe("completed");
    const { workloads } = await lineage(pool, id);
    expect(workloads.map((w) => w.pipeline)).toEqual(["stamp"]);
    expect((await ran()).filter((line) => line.endsWith(" 3"))).toEqual(["stamp 3"]);
  });

  it("never waits for a transaction holding the trigger's job, and that one then finds the trigger dispatched", async () => {
    const { id, jobId } = await storeQuietly("one-hook", 4);
    const holder = await pool.connect();
    try {
      await holder.query("BEGIN");
      // a polling worker's fetch: the job row is locked by this open transaction
      const fetched = await boss.fetch<DispatchJob>(DISPATCH_QUEUE, { db: transactionDb(holder) });
      expect(fetched.map((j) => j.id)).toEqual([jobId]);
      await announce(id, jobId, "one-hook");
      // dispatched and run to the end while the job's row stays locked
      expect((await waitForTrigger(pool, id)).status).toBe("completed");
      const trigger = await lockTrigger(holder, id);
      expect(trigger?.has_workloads).toBe(true);
      await boss.complete(DISPATCH_QUEUE, jobId, null, { db: transactionDb(holder) });
      await holder.query("COMMIT");
    } finally {
      holder.release();
    }
    expect((await lineage(pool, id)).workloads).toHaveLength(1);
    await waitForJob(id, "completed");
    expect((await ran()).filter((line) => line.endsWith(" 4"))).toEqual(["stamp 4"]);
  });

  it("two workers hearing the same announcements dispatch each trigger once", async () => {
    workers.push(await startWorker({ config, databaseUrl: database.url, logger: second.logger }));
    const ids: string[] = [];
    for (let batch = 0; batch < 6; batch += 1)
      ids.push(
        ...(await Promise.all(
          [0, 1, 2, 3].map((k) => record(k % 2 ? "one-hook" : "two-hook", 100 + batch * 4 + k)),
        )),
      );
    for (const id of ids) expect((await waitForTrigger(pool, id)).status).toBe("completed");
    for (const id of ids) {
      const { workloads, invocations } = await lineage(pool, id);
      expect(invocations.every((i) => i.attempts === 1 && i.status === "completed")).toBe(true);
      expect(workloads.length).toBe(invocations.length);
    }
    const lines = await ran();
    for (let n = 100; n < 124; n += 1) {
      const expected = n % 2 ? [`stamp ${n}`] : [`twin-a ${n}`, `twin-b ${n}`];
      expect(lines.filter((line) => line.endsWith(` ${n}`)).sort()).toEqual(expected);
    }
    // both workers took part
    expect(first.lines.some((line) => line.includes('"invocation.completed"'))).toBe(true);
    expect(second.lines.some((line) => line.includes('"invocation.completed"'))).toBe(true);
  });

  async function waitForJob(triggerId: string, state: string) {
    for (let attempt = 0; attempt < 600; attempt += 1) {
      if ((await job(triggerId))?.state === state) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`the dispatch job of ${triggerId} never reached ${state}`);
  }
});
