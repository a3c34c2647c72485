import { costLabelsOf, costsBy } from "./costs.ts";
import type { Queryable } from "./queryable.ts";

/**
 * What `budgets` of daemon.yaml reads and writes: the period's spend, counted by db/costs.ts's
 * queries (the agent tasks' `usage`, written from the gateway's ledger), and the `budget_wait`
 * diagnostic a held run's trigger shows while it waits (`svc trigger list --code budget_wait`).
 */

/** The run's repository as costs are counted under it; null when its trigger names none. */
export async function repoOfRun(db: Queryable, invocationId: string): Promise<string | null> {
  return (await costLabelsOf(db, invocationId)).repo;
}

/** USD spent by the tasks started since `since`: by every run (`org`), and by `repo`'s. */
export async function spendSince(
  db: Queryable,
  since: Date,
  repo: string | null,
): Promise<{ org: number; repo: number }> {
  const rows = await costsBy(db, "repo", since);
  let org = 0;
  let ofRepo = 0;
  for (const row of rows) {
    org += row.costUsd ?? 0;
    if (repo !== null && row.key === repo) ofRepo += row.costUsd ?? 0;
  }
  return { org, repo: ofRepo };
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
