import type { Queryable } from "./queryable.ts";

export type DeliveryStatus = "pending" | "sent" | "failed";

export interface DeliveryRow {
  invocation_id: string;
  output_key: string;
  handler: string;
  status: DeliveryStatus;
  remote_id: string | null;
  remote_url: string | null;
  attempts: number;
  last_error: string | null;
  created_at: Date;
  updated_at: Date;
}

/** The delivery row of (invocation, key), created `pending` the first time it is asked for. */
export async function openDelivery(
  db: Queryable,
  row: { invocationId: string; key: string; handler: string },
): Promise<DeliveryRow> {
  const { rows } = await db.query<DeliveryRow>(
    `WITH inserted AS (
       INSERT INTO svc.output_deliveries (invocation_id, output_key, handler) VALUES ($1, $2, $3)
       ON CONFLICT (invocation_id, output_key) DO NOTHING RETURNING *)
     SELECT * FROM inserted
     UNION ALL
     SELECT * FROM svc.output_deliveries WHERE invocation_id = $1 AND output_key = $2
     LIMIT 1`,
    [row.invocationId, row.key, row.handler],
  );
  return rows[0]!;
}

/** Counted before the request leaves, so a worker killed mid-post leaves `attempts > 0` behind. */
export async function countAttempt(db: Queryable, invocationId: string, key: string): Promise<number> {
  const { rows } = await db.query<{ attempts: number }>(
    `UPDATE svc.output_deliveries SET attempts = attempts + 1, updated_at = now()
     WHERE invocation_id = $1 AND output_key = $2 RETURNING attempts`,
    [invocationId, key],
  );
  return rows[0]?.attempts ?? 0;
}

export async function markSent(
  db: Queryable,
  invocationId: string,
  key: string,
  remote: { id: string; url: string | null },
): Promise<void> {
  await db.query(
    `UPDATE svc.output_deliveries
     SET status = 'sent', remote_id = $3, remote_url = $4, last_error = NULL, updated_at = now()
     WHERE invocation_id = $1 AND output_key = $2`,
    [invocationId, key, remote.id, remote.url],
  );
}

/** `failed` ends the delivery; `pending` keeps it open for another attempt, noting why this one failed. */
export async function noteError(
  db: Queryable,
  invocationId: string,
  key: string,
  error: string,
  status: "pending" | "failed",
): Promise<void> {
  await db.query(
    `UPDATE svc.output_deliveries SET status = $4, last_error = $3, updated_at = now()
     WHERE invocation_id = $1 AND output_key = $2`,
    [invocationId, key, error, status],
  );
}

export async function listDeliveries(db: Queryable, invocationIds: string[]): Promise<DeliveryRow[]> {
  if (invocationIds.length === 0) return [];
  const { rows } = await db.query<DeliveryRow>(
    `SELECT * FROM svc.output_deliveries WHERE invocation_id = ANY($1::text[])
     ORDER BY invocation_id, created_at, output_key`,
    [invocationIds],
  );
  return rows;
}

/**
 * Which of these code-host review ids svc posted itself (a `codehost.review` delivery that was
 * sent): review comments are trusted as svc's own only through this, never by their text.
 */
export async function ownReviewIds(db: Queryable, remoteIds: string[]): Promise<Set<string>> {
  if (remoteIds.length === 0) return new Set();
  const { rows } = await db.query<{ remote_id: string }>(
    `SELECT DISTINCT remote_id FROM svc.output_deliveries
     WHERE handler = 'codehost.review' AND status = 'sent' AND remote_id = ANY($1::text[])`,
    [remoteIds],
  );
  return new Set(rows.map((row) => row.remote_id));
}
