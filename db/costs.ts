import type { Queryable } from "./queryable.ts";
import { REPO } from "./repo-runs.ts";

/**
 * What runs cost, read from the agent tasks' `usage` (written from the worker gateway's ledger,
 * worker/gateway/ledger.ts): tokens are input (cached included) plus output, cost is the sum of
 * `cost_usd`, which a task has only when its target has a `price`. A group or a day none of whose
 * tasks had a price has cost null ("unpriced"), not 0.
 */

/**
 * The run's repository and author, from its trigger's payload. The repository is db/repo-runs.ts's
 * expression (as worker/event/context.ts reads it); the author as worker/event/authors.ts names
 * who caused a GitHub event (`sender.login`, a push's `pusher.name`), or GitLab's `user.username`.
 */
const AUTHOR = `coalesce(t.payload #>> '{sender,login}', t.payload #>> '{pusher,name}', t.payload #>> '{user,username}')`;

export const COST_GROUPS = ["repo", "pipeline", "author"] as const;
export type CostGroup = (typeof COST_GROUPS)[number];

const KEY: Record<CostGroup, string> = { repo: REPO, pipeline: "w.pipeline", author: AUTHOR };

const FROM = `FROM svc.tasks k
  JOIN svc.invocations i ON i.id = k.invocation_id
  JOIN svc.workloads w ON w.id = i.workload_id
  LEFT JOIN svc.triggers t ON t.id = w.trigger_id
 WHERE k.usage IS NOT NULL AND ($1::timestamptz IS NULL OR k.started_at >= $1)`;

const SUMS = `count(DISTINCT i.id)::int AS runs,
  coalesce(sum((k.usage ->> 'input_tokens')::numeric), 0)::float8 AS "inputTokens",
  coalesce(sum((k.usage ->> 'output_tokens')::numeric), 0)::float8 AS "outputTokens",
  sum((k.usage ->> 'cost_usd')::numeric)::float8 AS "costUsd"`;

export interface CostRow {
  /** the repository, pipeline or author; null when the run's trigger names none */
  key: string | null;
  runs: number;
  inputTokens: number;
  outputTokens: number;
  costUsd: number | null;
}

export interface CostDay {
  /** YYYY-MM-DD, UTC */
  day: string;
  inputTokens: number;
  outputTokens: number;
  costUsd: number | null;
}

/** Totals per repository, pipeline or author of the tasks started since `since`, costliest first. */
export async function costsBy(db: Queryable, by: CostGroup, since: Date | undefined): Promise<CostRow[]> {
  const { rows } = await db.query<CostRow>(
    `SELECT ${KEY[by]} AS key, ${SUMS} ${FROM}
      GROUP BY 1
      ORDER BY 5 DESC NULLS LAST, sum((k.usage ->> 'input_tokens')::numeric + (k.usage ->> 'output_tokens')::numeric) DESC, 1`,
    [since ?? null],
  );
  return rows;
}

/** The same tasks' totals per day (UTC), oldest first: what the cost chart draws. */
export async function costsPerDay(db: Queryable, since: Date | undefined): Promise<CostDay[]> {
  const { rows } = await db.query<CostDay>(
    `SELECT to_char(k.started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day,
            coalesce(sum((k.usage ->> 'input_tokens')::numeric), 0)::float8 AS "inputTokens",
            coalesce(sum((k.usage ->> 'output_tokens')::numeric), 0)::float8 AS "outputTokens",
            sum((k.usage ->> 'cost_usd')::numeric)::float8 AS "costUsd"
       ${FROM}
      GROUP BY 1 ORDER BY 1`,
    [since ?? null],
  );
  return rows;
}

/** One run's tokens (input + output) and cost so far, as its tasks recorded them: the footer's numbers. */
export async function runUsage(
  db: Queryable,
  invocationId: string,
): Promise<{ tokens: number; costUsd: number | null }> {
  const { rows } = await db.query<{ tokens: number; costUsd: number | null }>({
    name: "svc_run_usage",
    text: `SELECT coalesce(sum((usage ->> 'input_tokens')::numeric + (usage ->> 'output_tokens')::numeric), 0)::float8 AS tokens,
                  sum((usage ->> 'cost_usd')::numeric)::float8 AS "costUsd"
             FROM svc.tasks WHERE invocation_id = $1 AND usage IS NOT NULL`,
    values: [invocationId],
  });
  return rows[0] ?? { tokens: 0, costUsd: null };
}

/** The pipeline and repository (null when the trigger names none) a run's gateway costs are counted under. */
export async function costLabelsOf(
  db: Queryable,
  invocationId: string,
): Promise<{ pipeline: string; repo: string | null }> {
  const { rows } = await db.query<{ pipeline: string; repo: string | null }>({
    name: "svc_cost_labels",
    text: `SELECT w.pipeline, ${REPO} AS repo
             FROM svc.invocations i JOIN svc.workloads w ON w.id = i.workload_id
             LEFT JOIN svc.triggers t ON t.id = w.trigger_id
            WHERE i.id = $1`,
    values: [invocationId],
  });
  return rows[0] ?? { pipeline: "unknown", repo: null };
}
