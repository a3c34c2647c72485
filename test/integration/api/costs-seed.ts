import type pg from "pg";
import { newId } from "../../../shared/ids.ts";
import { seedLineage } from "./support.ts";

/** One agent task's usage, as the worker's gateway records it (db/tasks.ts TokenUsage). */
interface Spend {
  input_tokens: number;
  output_tokens: number;
  cost_usd?: number;
}

/** A finished run of `pipeline` on `repo` caused by `author`, `daysAgo` days back, with one agent task per spend. */
async function seedRun(
  pool: pg.Pool,
  run: { pipeline: string; repo: string; author: string; daysAgo: number; spends: Spend[] },
): Promise<void> {
  const { trigger, workload, invocation, task } = await seedLineage(pool);
  const at = new Date(Date.now() - run.daysAgo * 86_400_000);
  const payload = { repository: { full_name: run.repo }, sender: { login: run.author } };
  await pool.query("UPDATE svc.triggers SET payload = $2 WHERE id = $1", [trigger, JSON.stringify(payload)]);
  await pool.query("UPDATE svc.workloads SET pipeline = $2 WHERE id = $1", [workload, run.pipeline]);
  const [first, ...more] = run.spends;
  await pool.query("UPDATE svc.tasks SET usage = $2, started_at = $3 WHERE id = $1", [
    task,
    JSON.stringify(first),
    at,
  ]);
  for (const [index, spend] of more.entries())
    await pool.query(
      `INSERT INTO svc.tasks (id, invocation_id, kind, name, seq, status, exit_code, usage, started_at)
       VALUES ($1, $2, 'agent', 'agent', $3, 'completed', 0, $4, $5)`,
      [newId("task"), invocation, index + 2, JSON.stringify(spend), at],
    );
}

/**
 * Four runs: two priced ones of pr-review on acme/widgets (the second with two agent tasks, by two
 * authors), an unpriced nightly on acme/gadgets, and a costly pr-review run 40 days back that the
 * default window of 30 days leaves out. In the window: 3 runs, 22,800 tokens, $0.10.
 */
export async function seedCosts(pool: pg.Pool): Promise<void> {
  await seedRun(pool, {
    ...{ pipeline: "pr-review", repo: "acme/widgets", author: "dana", daysAgo: 2 },
    spends: [{ input_tokens: 10_000, output_tokens: 2_000, cost_usd: 0.06 }],
  });
  await seedRun(pool, {
    ...{ pipeline: "pr-review", repo: "acme/widgets", author: "lee", daysAgo: 1 },
    spends: [
      { input_tokens: 5_000, output_tokens: 1_000, cost_usd: 0.03 },
      { input_tokens: 1_000, output_tokens: 500, cost_usd: 0.01 },
    ],
  });
  await seedRun(pool, {
    ...{ pipeline: "nightly", repo: "acme/gadgets", author: "dana", daysAgo: 0 },
    spends: [{ input_tokens: 3_000, output_tokens: 300 }],
  });
  await seedRun(pool, {
    ...{ pipeline: "pr-review", repo: "acme/widgets", author: "dana", daysAgo: 40 },
    spends: [{ input_tokens: 90_000, output_tokens: 9_000, cost_usd: 1 }],
  });
}
