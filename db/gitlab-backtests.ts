import type { BacktestSelection, MergedPull } from "./backtests.ts";
import type { Queryable } from "./queryable.ts";

/**
 * The merged merge requests a backtest replays when svc serves GitLab (`codehost.kind: gitlab`),
 * read from svc.triggers as mergedPulls reads GitHub's: a merge request counts as merged when svc
 * recorded its `merge_request` delivery with action `merge`, and what is replayed is a delivery
 * recorded before that which put code up for review: `open`, `reopen`, or an `update` carrying
 * `oldrev` (a push; an update without it edits the title or labels). Never a held one. The repo is
 * the project's `path_with_namespace`, the number the merge request's `iid`, a head its
 * `last_commit`.
 */
export const GITLAB_CODE_ACTIONS = ["merge_request.open", "merge_request.reopen", "merge_request.update"];

export async function mergedMergeRequests(
  db: Queryable,
  selection: BacktestSelection,
): Promise<MergedPull[]> {
  const pulls = selection.pulls ?? null;
  const { rows } = await db.query<{
    repo: string;
    number: number;
    merged_at: Date;
    final_head: string;
    event_id: string | null;
    event_name: string | null;
    payload: unknown;
    head: string | null;
  }>(
    `WITH merges AS (
       SELECT DISTINCT ON (repo, number) t.created_at AS merged_at,
              t.payload->'project'->>'path_with_namespace' AS repo,
              (t.payload->'object_attributes'->>'iid')::int AS number,
              t.payload->'object_attributes'->'last_commit'->>'id' AS final_head
         FROM svc.triggers t
        WHERE t.kind = 'codehost' AND t.event_name = 'merge_request.merge' AND NOT t.hold_outputs
          AND t.payload->>'object_kind' = 'merge_request'
          AND ($1::timestamptz IS NULL OR t.created_at >= $1)
        ORDER BY repo, number, t.created_at DESC
     )
     SELECT m.repo, m.number, m.merged_at, m.final_head, e.id AS event_id, e.event_name, e.payload,
            e.payload->'object_attributes'->'last_commit'->>'id' AS head
       FROM merges m
       LEFT JOIN LATERAL (
         SELECT id, event_name, payload, created_at FROM svc.triggers e
          WHERE e.kind = 'codehost' AND e.event_name = ANY($2::text[]) AND NOT e.hold_outputs
            AND (e.event_name <> 'merge_request.update' OR e.payload->'object_attributes' ? 'oldrev')
            AND e.created_at <= m.merged_at
            AND e.payload->'project'->>'path_with_namespace' = m.repo
            AND e.payload->'object_attributes'->>'iid' = m.number::text
          ORDER BY CASE WHEN $3 = 'first' THEN e.created_at END ASC, e.created_at DESC
          LIMIT 1
       ) e ON true
      WHERE m.repo IS NOT NULL AND m.number IS NOT NULL AND m.final_head IS NOT NULL
        AND ($4::text[] IS NULL OR EXISTS (
              SELECT 1 FROM unnest($4::text[], $5::int[], $6::int[]) AS p(repo, lo, hi)
               WHERE p.repo = m.repo AND m.number BETWEEN p.lo AND p.hi))
      ORDER BY m.merged_at DESC, m.repo, m.number
      LIMIT $7`,
    [
      selection.since ?? null,
      GITLAB_CODE_ACTIONS,
      selection.at,
      pulls?.map((p) => p.repo) ?? null,
      pulls?.map((p) => p.from) ?? null,
      pulls?.map((p) => p.to) ?? null,
      selection.limit,
    ],
  );
  return rows.map((row) => ({
    repo: row.repo,
    number: row.number,
    mergedAt: row.merged_at,
    finalHead: row.final_head,
    event:
      row.event_id && row.event_name && row.head
        ? { trigger: row.event_id, name: row.event_name, payload: row.payload, head: row.head }
        : null,
  }));
}
