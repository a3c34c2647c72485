import type pg from "pg";
import type { PgBoss } from "pg-boss";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBoss } from "../../../db/boss.ts";
import type { ConfigSnapshot } from "../../../shared/config/types.ts";
import { type RunningWorker, startWorker } from "../../../worker/main.ts";
import { ensureWorkerQueues } from "../../../worker/queue/lanes.ts";
import { sweepWorkspaces } from "../../../worker/queue/retention.ts";
import {
  captureLogger,
  commandTarget,
  fire,
  makeConfig,
  openTestBed,
  pipeline,
  type TestBed,
  waitForTrigger,
} from "./helpers.ts";

/**
 * The contract: a dispatch naming an unknown agent leaves its trigger `discarded`
 * (`unknown_agent_reference`) in the shorter retention tier. With checkouts kept 10 days and
 * transcripts 90, the worker's retention sweep deletes a discarded trigger older than 10 days, and
 * keeps a younger one, one a replay points at, and a trigger that ran (`error`) of the same age.
 */
describe("the retention tier of discarded triggers", () => {
  let bed: TestBed;
  let pool: pg.Pool;
  let boss: PgBoss;
  let config: ConfigSnapshot;
  let worker: RunningWorker;
  const { logger } = captureLogger();

  beforeAll(async () => {
    bed = await openTestBed();
    pool = bed.pool;
    config = makeConfig(bed.dir, {
      workspaces: {
        checkoutRetentionDays: 10,
        transcriptRetentionDays: 90,
        repoCache: { maxSizeBytes: 20 * 1024 ** 3 },
      },
      targets: { broken: commandTarget("broken", ["/bin/false"]) },
      pipelines: {
        notes: pipeline("notes", { agent: "helper", targets: ["broken"] }),
      },
    });
    boss = await startBoss({ url: bed.database.url, supervise: false });
    await ensureWorkerQueues(boss, config);
    worker = await startWorker({ config, databaseUrl: bed.database.url, logger, heartbeatMs: 500 });
  });

  afterAll(async () => {
    await worker?.stop(1_000);
    await boss?.stop({ graceful: false });
    await bed?.close();
  });

  const ghost = (replayOf?: string) =>
    fire(pool, boss, {
      kind: "manual",
      source: "notes",
      eventName: "notes",
      payload: { args: {}, agent: "ghost" },
      ...(replayOf ? { replayOf } : {}),
    });

  it("deletes a discarded trigger past checkoutRetentionDays, not the ones it must keep", async () => {
    const old = await ghost();
    const young = await ghost();
    const replayed = await ghost();
    const replay = await ghost(replayed);
    const ran = await fire(pool, boss, {
      kind: "manual",
      source: "notes",
      eventName: "notes",
      payload: { args: {} },
    });
    for (const id of [old, young, replayed, replay]) {
      const trigger = await waitForTrigger(pool, id);
      expect([trigger.status, trigger.diagnostic?.code]).toEqual(["discarded", "unknown_agent_reference"]);
    }
    expect((await waitForTrigger(pool, ran)).status).toBe("error");
    // twelve days old: past the checkout tier (10), well inside the transcript tier (90)
    await pool.query("UPDATE svc.triggers SET created_at = now() - interval '12 days' WHERE id = ANY($1)", [
      [old, replayed, ran],
    ]);
    await pool.query("UPDATE svc.triggers SET created_at = now() - interval '9 days' WHERE id = $1", [young]);

    const result = await sweepWorkspaces(pool, config);
    expect(result.discardedTriggers).toBe(1);
    const { rows } = await pool.query<{ id: string }>("SELECT id FROM svc.triggers WHERE id = ANY($1)", [
      [old, young, replayed, replay, ran],
    ]);
    expect(new Set(rows.map((row) => row.id))).toEqual(new Set([young, replayed, replay, ran]));
  }, 60_000);
});
