import type pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createPool } from "../../db/connect.ts";
import { migrate } from "../../db/migrate.ts";
import { lastRunPerRepo, runsForPulls } from "../../db/repo-runs.ts";
import { newId } from "../../shared/ids.ts";
import { createTestDatabase, type TestDatabase } from "../support/database.ts";

/** What svc did for a GitLab project and its merge requests, read from GitLab's payloads. */
describe("repository runs of GitLab projects", () => {
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

  async function run(eventName: string, payload: unknown, minutesAgo: number): Promise<string> {
    const trigger = newId("trigger");
    const workload = newId("workload");
    await pool.query(
      `INSERT INTO svc.triggers (id, kind, source, event_name, status, payload, created_at)
       VALUES ($1, 'codehost', 'gitlab', $2, 'completed', $3, now() - make_interval(mins => $4))`,
      [trigger, eventName, JSON.stringify(payload), minutesAgo],
    );
    await pool.query(
      `INSERT INTO svc.workloads (id, trigger_id, pipeline, status, pipeline_version) VALUES ($1, $2, 'mr-review', 'completed', '1.0.0')`,
      [workload, trigger],
    );
    await pool.query(
      `INSERT INTO svc.invocations (id, workload_id, status, target) VALUES ($1, $2, 'completed', 'local')`,
      [newId("invocation"), workload],
    );
    return trigger;
  }

  it("finds a project by path_with_namespace and a merge request by its iid, from its own event or a note on it", async () => {
    const project = { id: 42, path_with_namespace: "group/sub/app" };
    const opened = await run(
      "merge_request.open",
      {
        object_kind: "merge_request",
        project,
        object_attributes: { iid: 5 },
      },
      2,
    );
    const noted = await run("note", { object_kind: "note", project, merge_request: { iid: 5 } }, 1);
    const last = await lastRunPerRepo(pool, ["group/sub/app"]);
    expect(last.get("group/sub/app")?.trigger).toBe(noted);
    const runs = await runsForPulls(pool, "group/sub/app", [5]);
    expect(runs.map((entry) => entry.trigger).sort()).toEqual([opened, noted].sort());
    expect(runs.every((entry) => entry.number === 5)).toBe(true);
  });
});
