import type pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createPool } from "../../db/connect.ts";
import { migrate } from "../../db/migrate.ts";
import type { Pipeline } from "../../shared/config/types.ts";
import { newId } from "../../shared/ids.ts";
import { budgetDecision } from "../../worker/run/budget-periods.ts";
import { createTestDatabase, type TestDatabase } from "../support/database.ts";

/**
 * Issue 57: shadow runs count against their own budget. A period budget of daemon.yaml
 * (`budgets.repos`) sums the live runs' spend for a live run and the shadow runs' spend for a
 * shadow run: a shadow that spent the day holds no live run, and live spend holds no shadow.
 */
const NOW = new Date();
const BUDGETS = { repos: { per: "day" as const, cost: 1 } };
const PIPELINE = { name: "review", file: "pipelines/review.yaml", targets: ["priced"] } as Pipeline;

describe("period budgets count shadow runs apart (db/budget-periods.ts spendSince)", () => {
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

  /** A run of `repo` with one agent task that spent `costUsd` now; returns its invocation. */
  async function run(repo: string, shadow: boolean, costUsd: number): Promise<string> {
    const [trigger, workload, invocation] = [newId("trigger"), newId("workload"), newId("invocation")];
    await pool.query(
      `INSERT INTO svc.triggers (id, kind, source, event_name, status, payload)
       VALUES ($1, 'webhook', 'review-hook', 'review-hook', 'running', $2)`,
      [trigger, JSON.stringify({ repository: { full_name: repo } })],
    );
    await pool.query(
      `INSERT INTO svc.workloads (id, trigger_id, pipeline, status, workspace) VALUES ($1, $2, 'review', 'open', '/tmp/ws')`,
      [workload, trigger],
    );
    await pool.query(
      `INSERT INTO svc.invocations (id, workload_id, status, target, attempts, shadow) VALUES ($1, $2, 'queued', 'priced', 0, $3)`,
      [invocation, workload, shadow],
    );
    if (costUsd > 0)
      await pool.query(
        `INSERT INTO svc.tasks (id, invocation_id, kind, name, seq, status, exit_code, usage, started_at)
         VALUES ($1, $2, 'agent', 'agent', 1, 'completed', 0, $3, now())`,
        [
          newId("task"),
          invocation,
          JSON.stringify({ input_tokens: 100, output_tokens: 10, cost_usd: costUsd }),
        ],
      );
    return invocation;
  }

  it("a shadow that spent the day holds no live run; the shadows' own spend holds the next shadow", async () => {
    await run("acme/widgets", true, 1.5);
    const live = await run("acme/widgets", false, 0);
    expect(await budgetDecision(pool, BUDGETS, { invocationId: live, pipeline: PIPELINE }, NOW)).toEqual({
      kind: "go",
    });
    const shadow = await run("acme/widgets", true, 0);
    const held = await budgetDecision(
      pool,
      BUDGETS,
      { invocationId: shadow, pipeline: PIPELINE, shadow: true },
      NOW,
    );
    expect(held).toMatchObject({ kind: "wait", diagnostic: { code: "budget_wait" } });
    expect(held.kind === "wait" && held.diagnostic.message).toMatch(
      /^the shadow runs of repository acme\/widgets spent \$1\.50 this day/,
    );
  });

  it("live spend holds live runs, not shadows", async () => {
    await run("acme/gadgets", false, 2);
    const live = await run("acme/gadgets", false, 0);
    expect(
      await budgetDecision(pool, BUDGETS, { invocationId: live, pipeline: PIPELINE }, NOW),
    ).toMatchObject({
      kind: "wait",
    });
    const shadow = await run("acme/gadgets", true, 0);
    expect(
      await budgetDecision(pool, BUDGETS, { invocationId: shadow, pipeline: PIPELINE, shadow: true }, NOW),
    ).toEqual({ kind: "go" });
  });
});
