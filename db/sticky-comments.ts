import type { Diagnostic } from "../shared/diagnostics.ts";
import type { Queryable } from "./queryable.ts";

export type StickyState = "progress" | "result" | "ended";

/** Which sticky comment: one per pipeline, pull request (`owner/name` and number) and output key. */
export interface StickyKey {
  pipeline: string;
  repo: string;
  number: number;
  key: string;
}

export interface StickyRow {
  pipeline: string;
  repo: string;
  number: number;
  output_key: string;
  comment_id: string;
  comment_url: string | null;
  invocation_id: string | null;
  state: StickyState;
  sha: string | null;
}

export async function getSticky(db: Queryable, key: StickyKey): Promise<StickyRow | undefined> {
  const { rows } = await db.query<StickyRow>(
    `SELECT * FROM svc.sticky_comments
     WHERE pipeline = $1 AND repo = $2 AND number = $3 AND output_key = $4`,
    [key.pipeline, key.repo, key.number, key.key],
  );
  return rows[0];
}

/** Records the comment and what the run `invocationId` last wrote into it. */
export async function saveSticky(
  db: Queryable,
  key: StickyKey,
  comment: { id: string; url: string | null },
  written: { invocationId: string; state: StickyState; sha: string | null },
): Promise<void> {
  await db.query(
    `INSERT INTO svc.sticky_comments
       (pipeline, repo, number, output_key, comment_id, comment_url, invocation_id, state, sha)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
     ON CONFLICT (pipeline, repo, number, output_key) DO UPDATE
     SET comment_id = EXCLUDED.comment_id, comment_url = EXCLUDED.comment_url,
         invocation_id = EXCLUDED.invocation_id, state = EXCLUDED.state, sha = EXCLUDED.sha,
         updated_at = now()`,
    [
      key.pipeline,
      key.repo,
      key.number,
      key.key,
      comment.id,
      comment.url,
      written.invocationId,
      written.state,
      written.sha,
    ],
  );
}

/** The comment was deleted on the code host: the next write posts a new one. */
export async function forgetSticky(db: Queryable, key: StickyKey): Promise<void> {
  await db.query(
    `DELETE FROM svc.sticky_comments WHERE pipeline = $1 AND repo = $2 AND number = $3 AND output_key = $4`,
    [key.pipeline, key.repo, key.number, key.key],
  );
}

/** The comments a run last wrote "in progress" into, with how the run ended (status, diagnostic). */
export async function progressLeftBy(
  db: Queryable,
  invocationId: string,
): Promise<{
  rows: StickyRow[];
  status: string | undefined;
  diagnostic: Diagnostic | null;
  triggerId: string | null;
}> {
  const { rows } = await db.query<
    StickyRow & { run_status: string; run_diagnostic: Diagnostic | null; trigger_id: string | null }
  >(
    `SELECT s.*, i.status AS run_status, i.diagnostic AS run_diagnostic, w.trigger_id
     FROM svc.sticky_comments s JOIN svc.invocations i ON i.id = s.invocation_id
     JOIN svc.workloads w ON w.id = i.workload_id
     WHERE s.invocation_id = $1 AND s.state = 'progress'`,
    [invocationId],
  );
  const first = rows[0];
  return {
    rows,
    status: first?.run_status,
    diagnostic: first?.run_diagnostic ?? null,
    triggerId: first?.trigger_id ?? null,
  };
}
