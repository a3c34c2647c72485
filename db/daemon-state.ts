import type { Queryable } from "./queryable.ts";

/**
 * Switches every svc process reads from the database, since ingress and workers share nothing else.
 * `drain` present means workers stop claiming new work; running work finishes.
 */
export interface DrainState {
  since: string;
  by: string;
}

export async function readDrain(db: Queryable): Promise<DrainState | null> {
  const { rows } = await db.query<{ value: DrainState }>(
    "SELECT value FROM svc.daemon_state WHERE key = 'drain'",
  );
  return rows[0]?.value ?? null;
}

/** Idempotent: draining an already drained daemon keeps the first `since`. */
export async function setDrain(db: Queryable, by: string): Promise<DrainState> {
  const { rows } = await db.query<{ value: DrainState }>(
    `INSERT INTO svc.daemon_state (key, value) VALUES ('drain', jsonb_build_object('since', now(), 'by', $1::text))
     ON CONFLICT (key) DO UPDATE SET key = EXCLUDED.key
     RETURNING value`,
    [by],
  );
  return rows[0]!.value;
}

/** Returns whether the daemon was drained. */
export async function clearDrain(db: Queryable): Promise<boolean> {
  const { rowCount } = await db.query("DELETE FROM svc.daemon_state WHERE key = 'drain'");
  return (rowCount ?? 0) > 0;
}

/** A worker's model gateway as `svc doctor` reports it (worker/gateway/). */
export interface GatewayState {
  worker: string;
  url: string;
  since: string;
}

/** Written when a worker's gateway starts listening; removed when the worker stops. */
export async function recordGateway(db: Queryable, worker: string, url: string): Promise<void> {
  await db.query(
    `INSERT INTO svc.daemon_state (key, value)
     VALUES ($1, jsonb_build_object('worker', $2::text, 'url', $3::text, 'since', now()))
     ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`,
    [`gateway:${worker}`, worker, url],
  );
}

export async function forgetGateway(db: Queryable, worker: string): Promise<void> {
  await db.query("DELETE FROM svc.daemon_state WHERE key = $1", [`gateway:${worker}`]);
}

export async function listGateways(db: Queryable): Promise<GatewayState[]> {
  const { rows } = await db.query<{ value: GatewayState }>(
    "SELECT value FROM svc.daemon_state WHERE key LIKE 'gateway:%' ORDER BY key",
  );
  return rows.map((row) => row.value);
}
