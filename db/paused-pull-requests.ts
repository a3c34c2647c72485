import type { Queryable } from "./queryable.ts";

/** Pauses a pull request's automatic runs; pausing a paused one keeps its first record. */
export async function pausePullRequest(db: Queryable, repo: string, number: number, by: string | null) {
  await db.query(
    `INSERT INTO svc.paused_pull_requests (repo, number, paused_by) VALUES ($1, $2, $3)
     ON CONFLICT (repo, number) DO NOTHING`,
    [repo, number, by],
  );
}

export async function resumePullRequest(db: Queryable, repo: string, number: number): Promise<void> {
  await db.query("DELETE FROM svc.paused_pull_requests WHERE repo = $1 AND number = $2", [repo, number]);
}

export async function isPullRequestPaused(db: Queryable, repo: string, number: number): Promise<boolean> {
  const { rowCount } = await db.query(
    "SELECT 1 FROM svc.paused_pull_requests WHERE repo = $1 AND number = $2",
    [repo, number],
  );
  return (rowCount ?? 0) > 0;
}
