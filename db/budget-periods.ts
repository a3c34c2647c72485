import { costLabelsOf } from "./costs.ts";
import type { Queryable } from "./queryable.ts";
import { REPO } from "./repo-runs.ts";

/**
 * What `budgets` of daemon.yaml reads and writes: the period's spend, counted by db/costs.ts's
 * queries (the agent tasks' `usage`, written from the gateway's ledger), and the `budget_wait`
 * diagnostic a held run's trigger shows while it waits (`svc trigger list --code budget_wait`).
 */

/** The run's repository as costs are counted under it; null when its trigger names none. */
export async function repoOfRun(db: Queryable, invocationId: string): Promise<string | null> {
  return (await costLabelsOf(db, invocationId)).repo;
}

/**
 * USD spent by the tasks started since `since`: by every run (`org`), and by `repo`'s; of the live
 * runs, or (`shadow`) of the shadow runs alone, which are counted apart (db/costs.ts counts the
 * same tasks, by the same repository expression, for `svc costs`).
 */
export async function spendSince(
  db: Queryable,
  since: Date,
  repo: string | null,
  shadow = false,
): Promise<{ org: number; repo: number }> {
  const { rows } = await db.query<{ org: number; repo: number }>({
    name: "svc_budget_spend",
    text: `SELECT coalesce(sum((k.usage ->> 'cost_usd')::numeric), 0)::float8 AS org,
                  coalesce(sum((k.usage ->> 'cost_usd')::numeric) FILTER (WHERE ${REPO} = $2), 0)::float8 AS repo
             FROM svc.tasks k
             JOIN svc.invocations i ON i.id = k.invocation_id
             JOIN svc.workloads w ON w.id = i.workload_id
             LEFT JOIN svc.triggers t ON t.id = w.trigger_id
            WHERE k.usage IS NOT NULL AND k.started_at >= $1 AND i.shadow = $3`,
    values: [since, repo, shadow],
  });
  return rows[0] ?? { org: 0, repo: 0 };
}

/**
 * The trigger says its run waits for a budget; true when it did not say so already, so the
 * sticky comment is written once per wait, not on every recheck. A settled trigger is left as it is.
 */
export async function markBudgetWait(
  db: Queryable,
  triggerId: string,
  diagnostic: { code: string; message: string },
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE svc.triggers SET diagnostic = $2::jsonb, updated_at = now()
      WHERE id = $1 AND status IN ('queued', 'running') AND diagnostic->>'code' IS DISTINCT FROM 'budget_wait'`,
    [triggerId, JSON.stringify(diagnostic)],
  );
  return (rowCount ?? 0) > 0;
}

/** The run goes ahead: its trigger no longer says it waits (its end settles the diagnostic anew). */
export async function clearBudgetWait(db: Queryable, triggerId: string): Promise<void> {
  await db.query(
    `UPDATE svc.triggers SET diagnostic = NULL, updated_at = now()
      WHERE id = $1 AND diagnostic->>'code' = 'budget_wait'`,
    [triggerId],
  );
}
