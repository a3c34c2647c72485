import type { Queryable } from "./queryable.ts";

export interface BreakerRow {
  pipeline: string;
  consecutive_failures: number;
  opened_at: Date | null;
  open_until: Date | null;
  updated_at: Date;
}

/**
 * Counts one failed invocation of `pipeline`; the failure that reaches `failures` opens the breaker
 * for `cooldownMs` (and resets the count). Returns the row and whether this very call opened it, so
 * exactly one caller escalates. A completed run resets the count in the statement that records its
 * end (db/invocations.ts finishInvocation): a plain UPDATE that leaves a breaker with nothing
 * counted unlocked and unwritten, where an upsert (ON CONFLICT DO UPDATE) locks the row even when
 * its WHERE skips the update, which took a transaction id and a WAL flush per run and queued a
 * pipeline's concurrent runs on its row (1 ms of lock wait a run with two workers).
 */
export async function countFailure(
  db: Queryable,
  pipeline: string,
  limits: { failures: number; cooldownMs: number },
): Promise<{ opened: boolean; row: BreakerRow }> {
  const { rows } = await db.query<BreakerRow>(
    `INSERT INTO svc.circuit_breakers AS b (pipeline, consecutive_failures) VALUES ($1, 1)
     ON CONFLICT (pipeline) DO UPDATE SET
       consecutive_failures = b.consecutive_failures + 1, updated_at = now()
     RETURNING b.*`,
    [pipeline],
  );
  const counted = rows[0]!;
  if (counted.consecutive_failures < limits.failures) return { row: counted, opened: false };
  const opened = await db.query<BreakerRow>(
    `UPDATE svc.circuit_breakers SET consecutive_failures = 0, opened_at = now(),
       open_until = now() + make_interval(secs => $2::double precision / 1000), updated_at = now()
     WHERE pipeline = $1 AND consecutive_failures >= $3 AND (open_until IS NULL OR open_until <= now())
     RETURNING *`,
    [pipeline, limits.cooldownMs, limits.failures],
  );
  return opened.rows[0] ? { row: opened.rows[0], opened: true } : { row: counted, opened: false };
}

export async function listOpenBreakers(db: Queryable): Promise<BreakerRow[]> {
  const { rows } = await db.query<BreakerRow>(
    "SELECT * FROM svc.circuit_breakers WHERE open_until > now() ORDER BY pipeline",
  );
  return rows;
}

/** Closes the open breaker of `pipeline` early (its count starts again); returns whether it was open. */
export async function closeBreaker(db: Queryable, pipeline: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE svc.circuit_breakers SET open_until = NULL, consecutive_failures = 0, updated_at = now()
     WHERE pipeline = $1 AND open_until > now()`,
    [pipeline],
  );
  return (rowCount ?? 0) > 0;
}
