import type { Queryable } from "./queryable.ts";

export interface BreakerRow {
  pipeline: string;
  consecutive_failures: number;
  opened_at: Date | null;
  open_until: Date | null;
  updated_at: Date;
}

/**
 * Counts one finished invocation of `pipeline`. A success resets the count; the failure that
 * reaches `failures` opens the breaker for `cooldownMs` (and resets the count). Returns the row
 * (undefined when nothing changed) and whether this very call opened it, so exactly one caller
 * escalates. A success that finds nothing counted writes nothing: that is almost every run of a
 * healthy pipeline, and a statement that writes no row commits without a WAL flush.
 */
export async function recordOutcome(
  db: Queryable,
  pipeline: string,
  failed: boolean,
  limits: { failures: number; cooldownMs: number },
): Promise<{ opened: true; row: BreakerRow } | { opened: false; row: BreakerRow | undefined }> {
  const { rows } = await db.query<BreakerRow & { opened: boolean }>(
    `INSERT INTO svc.circuit_breakers AS b (pipeline, consecutive_failures)
     VALUES ($1, CASE WHEN $2 THEN 1 ELSE 0 END)
     ON CONFLICT (pipeline) DO UPDATE SET
       consecutive_failures = CASE WHEN $2 THEN b.consecutive_failures + 1 ELSE 0 END,
       updated_at = now()
     WHERE $2 OR b.consecutive_failures <> 0
     RETURNING b.*, false AS opened`,
    [pipeline, failed],
  );
  const counted = rows[0];
  if (!failed || !counted || counted.consecutive_failures < limits.failures)
    return { row: counted, opened: false };
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
