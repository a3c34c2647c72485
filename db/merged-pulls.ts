import type { Queryable } from "./queryable.ts";

/**
 * The merged pull requests a backtest replays (issue 57), read from svc.triggers alone, on either
 * code host. GitHub: merged when svc recorded `pull_request.closed` with `merged: true`; replayed, a
 * `pull_request` delivery recorded before it (opened, reopened, synchronize, ready_for_review).
 * GitLab: merged when svc recorded `merge_request` with action `merge`; replayed, an `open`,
 * `reopen`, or an `update` carrying `oldrev` (a push; an update without it edits the title or
 * labels). Never a held delivery (a rehearsal's or another backtest's). The host's shape only names
 * where its payload keeps the repository, the number and the head: constants of this file, never
 * input.
 */

export interface BacktestSelection {
  /** merged at or after this time */
  since?: Date;
  /** merged pull requests of these repositories whose number is in [from, to] */
  pulls?: { repo: string; from: number; to: number }[];
  /**
   * `first`: the first recorded event (the head reviewers first saw; every later push is a "later
   * fix"); `last`: the last one before the merge
   */
  at: "first" | "last";
  limit: number;
}

/** A merged pull request and the recorded event a backtest would replay (null: none was recorded). */
export interface MergedPull {
  repo: string;
  number: number;
  mergedAt: Date;
  finalHead: string;
  event: { trigger: string; name: string; payload: unknown; head: string } | null;
}

interface HostShape {
  merge: string;
  /** SQL over the alias `t` naming the delivery's repository, number and head */
  repo: (t: string) => string;
  number: (t: string) => string;
  head: (t: string) => string;
  /** the recorded events a review answers: the head they name is the code the replay checks out */
  events: string[];
  /** more conditions on the merge delivery `t`, and on a replayed delivery `e` */
  merged: string;
  replayable: string;
}

const SHAPES: Record<"github" | "gitlab", HostShape> = {
  github: {
    merge: "pull_request.closed",
    repo: (t) => `${t}.payload->'repository'->>'full_name'`,
    number: (t) => `${t}.payload->'pull_request'->>'number'`,
    head: (t) => `${t}.payload->'pull_request'->'head'->>'sha'`,
    events: [
      "pull_request.opened",
      "pull_request.reopened",
      "pull_request.synchronize",
      "pull_request.ready_for_review",
    ],
    merged: "t.payload->'pull_request'->>'merged' = 'true'",
    replayable: "true",
  },
  gitlab: {
    merge: "merge_request.merge",
    repo: (t) => `${t}.payload->'project'->>'path_with_namespace'`,
    number: (t) => `${t}.payload->'object_attributes'->>'iid'`,
    head: (t) => `${t}.payload->'object_attributes'->'last_commit'->>'id'`,
    events: ["merge_request.open", "merge_request.reopen", "merge_request.update"],
    merged: "t.payload->>'object_kind' = 'merge_request'",
    replayable: "(e.event_name <> 'merge_request.update' OR e.payload->'object_attributes' ? 'oldrev')",
  },
};

export async function mergedPulls(
  db: Queryable,
  selection: BacktestSelection,
  host: "github" | "gitlab",
): Promise<MergedPull[]> {
  const shape = SHAPES[host];
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
       SELECT DISTINCT ON (repo, number) t.created_at AS merged_at, ${shape.repo("t")} AS repo,
              (${shape.number("t")})::int AS number, ${shape.head("t")} AS final_head
         FROM svc.triggers t
        WHERE t.kind = 'codehost' AND t.event_name = $8 AND NOT t.hold_outputs AND ${shape.merged}
          AND ($1::timestamptz IS NULL OR t.created_at >= $1)
        ORDER BY repo, number, t.created_at DESC
     )
     SELECT m.repo, m.number, m.merged_at, m.final_head, e.id AS event_id, e.event_name, e.payload,
            ${shape.head("e")} AS head
       FROM merges m
       LEFT JOIN LATERAL (
         SELECT id, event_name, payload, created_at FROM svc.triggers e
          WHERE e.kind = 'codehost' AND e.event_name = ANY($2::text[]) AND NOT e.hold_outputs
            AND ${shape.replayable}
            AND e.created_at <= m.merged_at
            AND ${shape.repo("e")} = m.repo
            AND ${shape.number("e")} = m.number::text
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
      shape.events,
      selection.at,
      pulls?.map((p) => p.repo) ?? null,
      pulls?.map((p) => p.from) ?? null,
      pulls?.map((p) => p.to) ?? null,
      selection.limit,
      shape.merge,
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
