import { DURATION_MS } from "./eval-stats.ts";
import { dismissalWhy } from "./notes.ts";
import type { Queryable } from "./queryable.ts";

/**
 * Findings per run with their fate (migration 104): what a live review posted and what a shadow
 * run would have posted, and what people did with the live ones afterwards. The fate is written by
 * worker/outputs/finding-fates.ts at the next review of the pull request; a shadow's findings take
 * the fate of the live finding on the same lines of the same event when they are read (pairs).
 */
export const FATES = ["open", "resolved_with_change", "dismissed", "thumbed_down"] as const;
export type Fate = (typeof FATES)[number];

/** One inline finding as a review posts it (or a held run would have): its lines and identity. */
export interface FoundFinding {
  path: string;
  startLine: number;
  endLine: number;
  fingerprint: string | null;
  rule: string;
}

/**
 * Records the findings of one run's review, once each (a retried publish adds nothing). The run's
 * pipeline, version and shadow flag are the invocation's own. `shadowOnly`: record nothing unless
 * the run is a shadow run (a held rehearsal of the live version is nobody's finding).
 */
export async function recordFindings(
  db: Queryable,
  run: {
    invocationId: string;
    repo: string;
    pull: number;
    key: string;
    reviewId: string | null;
    shadowOnly: boolean;
  },
  findings: readonly FoundFinding[],
): Promise<number> {
  if (findings.length === 0) return 0;
  const { rowCount } = await db.query(
    `INSERT INTO svc.review_findings (invocation_id, pipeline, version, shadow, repo, pull_number, output_key,
                                      path, start_line, end_line, fingerprint, rule, review_id)
     SELECT i.id, w.pipeline, w.pipeline_version, i.shadow, $2, $3, $4,
            f.path, f.start_line, f.end_line, f.fingerprint, f.rule, $5
       FROM svc.invocations i JOIN svc.workloads w ON w.id = i.workload_id,
            unnest($6::text[], $7::int[], $8::int[], $9::text[], $10::text[])
              AS f(path, start_line, end_line, fingerprint, rule)
      WHERE i.id = $1 AND (NOT $11::boolean OR i.shadow)
     ON CONFLICT DO NOTHING`,
    [
      run.invocationId,
      run.repo,
      run.pull,
      run.key,
      run.reviewId,
      findings.map((f) => f.path),
      findings.map((f) => f.startLine),
      findings.map((f) => f.endLine),
      findings.map((f) => f.fingerprint),
      findings.map((f) => f.rule),
      run.shadowOnly,
    ],
  );
  return rowCount ?? 0;
}

/**
 * What a review thread of svc's says about the live finding it carries: the comment (by the review
 * it was posted in and its fingerprint), and its fate when it has one now (null: still open).
 */
export interface ThreadFate {
  repo: string;
  pull: number;
  fingerprint: string;
  reviewId: string;
  commentId: string;
  fate: Exclude<Fate, "open"> | null;
  reason: string | null;
}

/**
 * Writes what the threads say: each live finding learns its comment id, and an open finding takes
 * its fate. A member's dismissal or thumbs-down overrides a fate read before (their act is the
 * clearest signal); nothing goes back to open. Returns how many findings changed fate.
 */
export async function updateFates(db: Queryable, threads: readonly ThreadFate[]): Promise<number> {
  if (threads.length === 0) return 0;
  const { rows } = await db.query<{ changed: boolean }>(
    `WITH t AS (
       SELECT * FROM unnest($1::text[], $2::int[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[])
         AS t(repo, pull, fingerprint, review_id, comment_id, fate, reason)),
     target AS (
       SELECT f.id, t.comment_id,
              CASE WHEN t.fate IS NOT NULL AND t.fate IS DISTINCT FROM f.fate
                        AND (f.fate = 'open' OR t.fate IN ('dismissed', 'thumbed_down'))
                   THEN t.fate END AS next_fate, t.reason
         FROM svc.review_findings f JOIN t
           ON f.repo = t.repo AND f.pull_number = t.pull AND f.fingerprint = t.fingerprint
          AND (f.comment_id = t.comment_id OR (f.comment_id IS NULL AND f.review_id = t.review_id))
        WHERE NOT f.shadow)
     UPDATE svc.review_findings f
        SET comment_id = target.comment_id,
            fate = coalesce(target.next_fate, f.fate),
            fate_reason = CASE WHEN target.next_fate IS NULL THEN f.fate_reason ELSE target.reason END,
            updated_at = CASE WHEN target.next_fate IS NULL THEN f.updated_at ELSE now() END
       FROM target
      WHERE f.id = target.id AND (f.comment_id IS NULL OR target.next_fate IS NOT NULL)
     RETURNING target.next_fate IS NOT NULL AS changed`,
    [
      threads.map((t) => t.repo),
      threads.map((t) => t.pull),
      threads.map((t) => t.fingerprint),
      threads.map((t) => t.reviewId),
      threads.map((t) => t.commentId),
      threads.map((t) => t.fate),
      threads.map((t) => t.reason),
    ],
  );
  return rows.filter((row) => row.changed).length;
}

/**
 * Of these review threads, those judged dismissals (svc.dismissed_threads, migration 102), with
 * why, read from the dismissal's note (null once the note was deleted: still dismissed).
 */
export async function dismissedThreadReasons(
  db: Queryable,
  threadIds: readonly string[],
): Promise<Map<string, string | null>> {
  if (threadIds.length === 0) return new Map();
  const { rows } = await db.query<{ thread: string; body: string | null; path: string | null }>(
    `SELECT d.thread_id AS thread, n.body, n.path FROM svc.dismissed_threads d
       LEFT JOIN svc.notes n ON n.id = d.note_id WHERE d.thread_id = ANY($1::text[])`,
    [threadIds],
  );
  return new Map(
    rows.map((row) => [row.thread, row.body === null ? null : dismissalWhy(row.body, row.path)]),
  );
}

/** One side of a pair: the run, its version, duration, tokens and cost (null when unreported). */
export interface PairRun {
  invocation: string;
  version: string | null;
  durationMs: number | null;
  tokens: number | null;
  costUsd: number | null;
  createdAt: Date;
}

/** A shadow run and the live run of the same trigger and pipeline, with their findings. */
export interface ShadowPair {
  trigger: string;
  live: PairRun;
  shadow: PairRun;
}

export interface PairFinding {
  invocation: string;
  path: string;
  startLine: number;
  endLine: number;
  fate: Fate;
}

const MAX_PAIRS = 20_000;

/**
 * The pipeline's pairs, newest first: per trigger its latest completed shadow run and its latest
 * completed live run (a failed run posted nothing to judge), and every finding either recorded.
 */
export async function readShadowPairs(
  db: Queryable,
  pipeline: string,
): Promise<{ pairs: ShadowPair[]; findings: PairFinding[] }> {
  const { rows } = await db.query<{
    trigger: string;
    shadow: boolean;
    invocation: string;
    version: string | null;
    durationMs: number | null;
    tokens: number | null;
    costUsd: number | null;
    createdAt: Date;
  }>(
    `WITH runs AS (
       SELECT DISTINCT ON (w.trigger_id, i.shadow) w.trigger_id AS trigger, i.shadow, i.id AS invocation,
              w.pipeline_version AS version, ${DURATION_MS} AS "durationMs", i.created_at AS "createdAt",
              u.tokens, u.cost_usd AS "costUsd"
         FROM svc.workloads w JOIN svc.invocations i ON i.workload_id = w.id
         LEFT JOIN LATERAL (
           SELECT sum((k.usage->>'input_tokens')::numeric + (k.usage->>'output_tokens')::numeric)::float8 AS tokens,
                  sum((k.usage->>'cost_usd')::numeric)::float8 AS cost_usd
             FROM svc.tasks k WHERE k.invocation_id = i.id AND k.usage IS NOT NULL) u ON true
        WHERE w.pipeline = $1 AND w.trigger_id IS NOT NULL
          AND i.status = 'completed' AND i.finished_at IS NOT NULL
        ORDER BY w.trigger_id, i.shadow, i.created_at DESC),
     paired AS (
       SELECT s.trigger FROM runs s JOIN runs l ON l.trigger = s.trigger AND NOT l.shadow
        WHERE s.shadow ORDER BY s."createdAt" DESC LIMIT ${MAX_PAIRS})
     SELECT r.* FROM runs r JOIN paired p ON p.trigger = r.trigger`,
    [pipeline],
  );
  const byTrigger = new Map<string, Partial<ShadowPair>>();
  for (const { trigger, shadow, ...run } of rows) {
    const pair = byTrigger.get(trigger) ?? { trigger };
    pair[shadow ? "shadow" : "live"] = run;
    byTrigger.set(trigger, pair);
  }
  const pairs = [...byTrigger.values()]
    .filter((pair): pair is ShadowPair => Boolean(pair.live && pair.shadow))
    .sort((x, y) => y.shadow.createdAt.getTime() - x.shadow.createdAt.getTime());
  const ids = pairs.flatMap((pair) => [pair.live.invocation, pair.shadow.invocation]);
  if (ids.length === 0) return { pairs, findings: [] };
  const found = await db.query<PairFinding>(
    `SELECT invocation_id AS invocation, path, start_line AS "startLine", end_line AS "endLine", fate
       FROM svc.review_findings WHERE invocation_id = ANY($1::text[]) ORDER BY id`,
    [ids],
  );
  return { pairs, findings: found.rows };
}

/** Tokens and USD of one side's runs: null cost when no run of it had a priced target. */
export interface Spend {
  runs: number;
  tokens: number;
  costUsd: number | null;
}

/**
 * What shadowing cost beside what the live runs cost, over the same window: every run of the
 * candidate `version` (shadow), and every live run of `liveVersion` since the first of them, paired
 * or not (a share under 1 leaves events without a shadow run, and they still cost the live side).
 */
export async function shadowingSpend(
  db: Queryable,
  filter: { pipeline: string; liveVersion: string | null; candidateVersion: string | null },
): Promise<{ live: Spend; shadow: Spend }> {
  const { rows } = await db.query<Spend & { shadow: boolean }>(
    `WITH since AS (
       SELECT min(i.created_at) AS at FROM svc.workloads w JOIN svc.invocations i ON i.workload_id = w.id
        WHERE w.pipeline = $1 AND i.shadow AND w.pipeline_version IS NOT DISTINCT FROM $3)
     SELECT i.shadow, count(DISTINCT i.id)::int AS runs,
            coalesce(sum((k.usage->>'input_tokens')::numeric + (k.usage->>'output_tokens')::numeric), 0)::float8 AS tokens,
            sum((k.usage->>'cost_usd')::numeric)::float8 AS "costUsd"
       FROM svc.workloads w JOIN svc.invocations i ON i.workload_id = w.id
       LEFT JOIN svc.tasks k ON k.invocation_id = i.id AND k.usage IS NOT NULL, since
      WHERE w.pipeline = $1 AND i.created_at >= since.at AND i.status IN ('completed', 'failed')
        AND ((i.shadow AND w.pipeline_version IS NOT DISTINCT FROM $3)
          OR (NOT i.shadow AND w.pipeline_version IS NOT DISTINCT FROM $2))
      GROUP BY i.shadow`,
    [filter.pipeline, filter.liveVersion, filter.candidateVersion],
  );
  const none: Spend = { runs: 0, tokens: 0, costUsd: null };
  const side = (shadow: boolean) => {
    const row = rows.find((entry) => entry.shadow === shadow);
    return row ? { runs: row.runs, tokens: row.tokens, costUsd: row.costUsd } : none;
  };
  return { live: side(false), shadow: side(true) };
}
