import type pg from "pg";
import { DISPATCH_QUEUE } from "../../../shared/queues.ts";
import { LOG_DIR } from "./processes.ts";

/**
 * The exact accounting a drill ends with, read from the database: accepted requests (the drill's
 * own count) against triggers, dispatch jobs, workloads and invocations. pg-boss 12 keeps
 * completed jobs in `pgboss.job` (no archive table) until `deletion_seconds` (7 days) pass, so
 * `pgboss.job` holds every dispatch job a drill created.
 */
export interface Accounting {
  triggers: number;
  triggersByStatus: Record<string, number>;
  dispatchJobs: number;
  dispatchJobsByState: Record<string, number>;
  /** dispatch jobs naming no trigger, and triggers without exactly one dispatch job */
  orphanJobs: number;
  triggersWithoutOneJob: number;
  workloads: number;
  invocations: number;
  invocationsByStatus: Record<string, number>;
  /** diagnostic codes of failed invocations */
  failedCodes: Record<string, number>;
}

function grouped(rows: { key: string | null; n: number }[]): Record<string, number> {
  return Object.fromEntries(rows.map((row) => [row.key ?? "null", row.n]));
}

export async function account(db: pg.Pool | pg.Client): Promise<Accounting> {
  const one = async (sql: string, values: unknown[] = []) => Number((await db.query(sql, values)).rows[0].n);
  const group = async (sql: string, values: unknown[] = []) =>
    grouped((await db.query<{ key: string | null; n: number }>(sql, values)).rows);
  return {
    triggers: await one("SELECT count(*)::int AS n FROM svc.triggers"),
    triggersByStatus: await group(
      "SELECT status AS key, count(*)::int AS n FROM svc.triggers GROUP BY 1 ORDER BY 1",
    ),
    dispatchJobs: await one("SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1", [DISPATCH_QUEUE]),
    dispatchJobsByState: await group(
      "SELECT state::text AS key, count(*)::int AS n FROM pgboss.job WHERE name = $1 GROUP BY 1 ORDER BY 1",
      [DISPATCH_QUEUE],
    ),
    orphanJobs: await one(
      `SELECT count(*)::int AS n FROM pgboss.job j WHERE j.name = $1
        AND NOT EXISTS (SELECT 1 FROM svc.triggers t WHERE t.id = j.data->>'triggerId')`,
      [DISPATCH_QUEUE],
    ),
    triggersWithoutOneJob: await one(
      `SELECT count(*)::int AS n FROM svc.triggers t
         LEFT JOIN (SELECT data->>'triggerId' AS id, count(*) AS jobs FROM pgboss.job WHERE name = $1 GROUP BY 1) j
           ON j.id = t.id
        WHERE coalesce(j.jobs, 0) <> 1`,
      [DISPATCH_QUEUE],
    ),
    workloads: await one("SELECT count(*)::int AS n FROM svc.workloads"),
    invocations: await one("SELECT count(*)::int AS n FROM svc.invocations"),
    invocationsByStatus: await group(
      "SELECT status AS key, count(*)::int AS n FROM svc.invocations GROUP BY 1 ORDER BY 1",
    ),
    failedCodes: await group(
      "SELECT diagnostic->>'code' AS key, count(*)::int AS n FROM svc.invocations WHERE status = 'failed' GROUP BY 1 ORDER BY 1",
    ),
  };
}

/** Each accepted trigger id: present exactly once in svc.triggers, with exactly one dispatch job. */
export async function checkAccepted(
  db: pg.Pool | pg.Client,
  ids: string[],
): Promise<{ distinct: number; stored: number; withOneJob: number; missing: string[] }> {
  const distinct = [...new Set(ids)];
  const { rows } = await db.query<{ id: string; jobs: number }>(
    `SELECT t.id, coalesce(j.jobs, 0)::int AS jobs
       FROM svc.triggers t
       LEFT JOIN (SELECT data->>'triggerId' AS id, count(*) AS jobs FROM pgboss.job WHERE name = $2 GROUP BY 1) j
         ON j.id = t.id
      WHERE t.id = ANY($1::text[])`,
    [distinct, DISPATCH_QUEUE],
  );
  const found = new Set(rows.map((row) => row.id));
  return {
    distinct: distinct.length,
    stored: rows.length,
    withOneJob: rows.filter((row) => row.jobs === 1).length,
    missing: distinct.filter((id) => !found.has(id)).slice(0, 10),
  };
}

/**
 * Waits, bounded, until no trigger and no invocation is queued or running, then returns the full
 * accounting (also when the bound ran out: the caller's assertions then say what is still open).
 */
export async function waitForQuiet(
  db: pg.Pool | pg.Client,
  boundMs: number,
  /** stop waiting early when one of these is gone: nothing would drain the rest */
  needed: { alive(): boolean }[] = [],
): Promise<Accounting> {
  const deadline = Date.now() + boundMs;
  for (;;) {
    if (needed.length && !needed.some((p) => p.alive())) return await account(db);
    const { rows } = await db.query<{ n: number }>(
      `SELECT (SELECT count(*) FROM svc.triggers WHERE status IN ('queued', 'running'))::int
            + (SELECT count(*) FROM svc.invocations WHERE status IN ('queued', 'running'))::int AS n`,
    );
    if (rows[0]!.n === 0 || Date.now() > deadline) return await account(db);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/** The accounting line a drill prints: `[drill <name>] <label>: k=v …`. */
export function printLine(drill: string, label: string, fields: Record<string, unknown>): string {
  const text = Object.entries(fields)
    .map(([key, value]) => `${key}=${typeof value === "object" ? JSON.stringify(value) : String(value)}`)
    .join(" ");
  const line = `[drill ${drill}] ${label}: ${text}`;
  process.stdout.write(`${line}\n`);
  return line;
}

export function summary(a: Accounting): Record<string, unknown> {
  return {
    triggers: a.triggers,
    trigger_status: a.triggersByStatus,
    dispatch_jobs: a.dispatchJobs,
    job_state: a.dispatchJobsByState,
    orphan_jobs: a.orphanJobs,
    triggers_without_one_job: a.triggersWithoutOneJob,
    workloads: a.workloads,
    invocations: a.invocations,
    invocation_status: a.invocationsByStatus,
    failed_codes: a.failedCodes,
  };
}

/** Times a drill and prints its duration when it ends, passed or failed. */
export async function timed<T>(drill: string, work: () => Promise<T>): Promise<T> {
  const started = performance.now();
  try {
    return await work();
  } finally {
    printLine(drill, "duration", {
      seconds: ((performance.now() - started) / 1000).toFixed(1),
      process_logs: `${LOG_DIR}/<name>-<pid>.log`,
    });
  }
}
