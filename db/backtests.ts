import type pg from "pg";
import type { PgBoss } from "pg-boss";
import { newId } from "../shared/ids.ts";
import type { MergedPull } from "./merged-pulls.ts";
import type { Queryable } from "./queryable.ts";
import { recordTriggers } from "./record-trigger.ts";

/**
 * Backtests (issue 57, migration 105): a pipeline's candidate version replayed on the recorded
 * events of merged pull requests (which ones: merged-pulls.ts).
 */

export interface NewBacktest {
  pipeline: string;
  versionFile: string;
  candidateVersion: string;
  liveVersion: string;
  selection: Record<string, unknown>;
  owner: string | null;
  /** the candidate's model calls are answered from the live runs' recorded answers (migration 106) */
  replayAnswers: boolean;
  /** merged pull requests with a recorded event */
  pulls: (MergedPull & { event: NonNullable<MergedPull["event"]> })[];
}

/**
 * Records the backtest, its items and one held replay trigger per pull request in one transaction:
 * a `replay` trigger whose `source` is the pipeline and whose `backtest_id` names the backtest, so
 * dispatch runs that pipeline's shadow candidate alone on the recorded event, its outputs held back.
 */
export async function startBacktest(pool: pg.Pool, boss: PgBoss, backtest: NewBacktest): Promise<string> {
  const id = newId("backtest");
  await recordTriggers(
    pool,
    boss,
    backtest.pulls.map((pull) => ({
      kind: "replay" as const,
      source: backtest.pipeline,
      eventName: pull.event.name,
      deliveryId: null,
      payloadJson: JSON.stringify(pull.event.payload),
      owner: backtest.owner,
      holdOutputs: true,
    })),
    async (client, recorded) => {
      await client.query(
        `INSERT INTO svc.backtests (id, pipeline, version_file, candidate_version, live_version, selection, created_by, replay_answers)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
        [
          id,
          backtest.pipeline,
          backtest.versionFile,
          backtest.candidateVersion,
          backtest.liveVersion,
          JSON.stringify(backtest.selection),
          backtest.owner,
          backtest.replayAnswers,
        ],
      );
      const triggers = recorded.map((trigger) => trigger.id);
      await client.query("UPDATE svc.triggers SET backtest_id = $1 WHERE id = ANY($2::text[])", [
        id,
        triggers,
      ]);
      const pulls = backtest.pulls;
      await client.query(
        `INSERT INTO svc.backtest_items
           (backtest_id, repo, pull_number, replayed_trigger_id, trigger_id, head_sha, final_head_sha, merged_at)
         SELECT $1, r, n, e, t, h, f, m
           FROM unnest($2::text[], $3::int[], $4::text[], $5::text[], $6::text[], $7::text[], $8::timestamptz[])
                AS x(r, n, e, t, h, f, m)`,
        [
          id,
          pulls.map((p) => p.repo),
          pulls.map((p) => p.number),
          pulls.map((p) => p.event.trigger),
          triggers,
          pulls.map((p) => p.event.head),
          pulls.map((p) => p.finalHead),
          pulls.map((p) => p.mergedAt),
        ],
      );
    },
  );
  return id;
}

export interface BacktestRow {
  id: string;
  pipeline: string;
  versionFile: string;
  candidateVersion: string;
  liveVersion: string;
  selection: Record<string, unknown>;
  createdBy: string | null;
  createdAt: Date;
  /** started with `replay_answers`: its candidate runs were answered from recorded model answers */
  replayAnswers: boolean;
}

/** A run as a backtest reads it: the candidate's replay, or the live run of the replayed event. */
export interface BacktestRun {
  invocation: string;
  status: string;
  version: string | null;
  code: string | null;
  result: unknown;
  /** the `held/outputs.json` artifact's text, when the run's outputs were held back */
  held: string | null;
}

export interface BacktestItem {
  repo: string;
  number: number;
  replayedTrigger: string | null;
  trigger: string | null;
  triggerStatus: string | null;
  head: string;
  finalHead: string;
  mergedAt: Date;
  comparison: unknown;
  candidate: BacktestRun | null;
  live: BacktestRun | null;
}

export async function getBacktest(db: Queryable, id: string): Promise<BacktestRow | undefined> {
  const { rows } = await db.query<BacktestRow>(
    `SELECT id, pipeline, version_file AS "versionFile", candidate_version AS "candidateVersion",
            live_version AS "liveVersion", selection, created_by AS "createdBy", created_at AS "createdAt",
            replay_answers AS "replayAnswers"
       FROM svc.backtests WHERE id = $1`,
    [id],
  );
  return rows[0];
}

/**
 * A backtest's pull requests with the candidate's run (the shadow invocation of the replay trigger)
 * and the live run of the same pipeline on the event that was replayed, when there was one.
 */
export async function backtestItems(db: Queryable, backtest: BacktestRow): Promise<BacktestItem[]> {
  // the candidate's is the shadow run of the replay; the live one the replayed event's own
  const run = (trigger: string, shadow: boolean) => `(SELECT jsonb_build_object(
        'invocation', i.id, 'status', i.status, 'version', w.pipeline_version,
        'code', i.diagnostic->>'code', 'result', i.result,
        'held', (SELECT a.rendered FROM svc.artifacts a WHERE a.invocation_id = i.id AND a.name = 'held/outputs.json'))
      FROM svc.workloads w JOIN svc.invocations i ON i.workload_id = w.id
     WHERE w.trigger_id = ${trigger} AND w.pipeline = $2 AND i.shadow = ${shadow}
     ORDER BY i.created_at DESC LIMIT 1)`;
  const { rows } = await db.query<{
    repo: string;
    pull_number: number;
    replayed_trigger_id: string | null;
    trigger_id: string | null;
    trigger_status: string | null;
    head_sha: string;
    final_head_sha: string;
    merged_at: Date;
    comparison: unknown;
    candidate: BacktestRun | null;
    live: BacktestRun | null;
  }>(
    `SELECT b.repo, b.pull_number, b.replayed_trigger_id, b.trigger_id, t.status AS trigger_status,
            b.head_sha, b.final_head_sha, b.merged_at, b.comparison,
            ${run("b.trigger_id", true)} AS candidate, ${run("b.replayed_trigger_id", false)} AS live
       FROM svc.backtest_items b LEFT JOIN svc.triggers t ON t.id = b.trigger_id
      WHERE b.backtest_id = $1
      ORDER BY b.merged_at DESC, b.repo, b.pull_number`,
    [backtest.id, backtest.pipeline],
  );
  return rows.map((row) => ({
    repo: row.repo,
    number: row.pull_number,
    replayedTrigger: row.replayed_trigger_id,
    trigger: row.trigger_id,
    triggerStatus: row.trigger_status,
    head: row.head_sha,
    finalHead: row.final_head_sha,
    mergedAt: row.merged_at,
    comparison: row.comparison,
    candidate: row.candidate,
    live: row.live,
  }));
}

/** Keeps an item's comparison, computed once its run ended (the reads behind it cost API calls). */
export async function saveComparison(
  db: Queryable,
  backtest: string,
  item: { repo: string; number: number },
  comparison: unknown,
): Promise<void> {
  await db.query(
    "UPDATE svc.backtest_items SET comparison = $4 WHERE backtest_id = $1 AND repo = $2 AND pull_number = $3",
    [backtest, item.repo, item.number, JSON.stringify(comparison)],
  );
}

/** A backtest as listed: its versions and how far its runs and comparisons have come. */
export interface BacktestSummary {
  id: string;
  pipeline: string;
  candidateVersion: string;
  liveVersion: string;
  createdAt: Date;
  pulls: number;
  /** items whose held run's trigger has ended */
  ended: number;
  /** items whose comparison was computed (the first read of the backtest after its run ended) */
  compared: number;
}

/** The newest backtests, of one pipeline or all. */
export async function listBacktests(
  db: Queryable,
  filter: { pipeline?: string; limit: number },
): Promise<BacktestSummary[]> {
  const { rows } = await db.query<BacktestSummary>(
    `SELECT b.id, b.pipeline, b.candidate_version AS "candidateVersion", b.live_version AS "liveVersion",
            b.created_at AS "createdAt", count(i.repo)::int AS pulls,
            count(i.repo) FILTER (WHERE t.status IS NOT NULL AND t.status NOT IN ('queued', 'running'))::int AS ended,
            count(i.comparison)::int AS compared
       FROM svc.backtests b
       LEFT JOIN svc.backtest_items i ON i.backtest_id = b.id
       LEFT JOIN svc.triggers t ON t.id = i.trigger_id
      WHERE $1::text IS NULL OR b.pipeline = $1
      GROUP BY b.id
      ORDER BY b.created_at DESC, b.id
      LIMIT $2`,
    [filter.pipeline ?? null, filter.limit],
  );
  return rows;
}
