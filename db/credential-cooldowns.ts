import type { Queryable } from "./queryable.ts";

export interface CooldownRow {
  target: string;
  credential: string;
  state: "cooling" | "dead";
  reason: string;
  until: Date | null;
  dead_at: Date | null;
  updated_at: Date;
}

export async function listCooldowns(db: Queryable): Promise<CooldownRow[]> {
  const { rows } = await db.query<CooldownRow>(
    "SELECT * FROM svc.credential_cooldowns ORDER BY target, credential",
  );
  return rows;
}

/** The credentials marked dead, in a stable order: `svc doctor` names them for the operator to replace. */
export async function listDeadCredentials(db: Queryable): Promise<{ target: string; credential: string }[]> {
  const { rows } = await db.query<{ target: string; credential: string }>(
    "SELECT target, credential FROM svc.credential_cooldowns WHERE state = 'dead' ORDER BY target, credential",
  );
  return rows;
}

export async function markCooling(
  db: Queryable,
  row: { target: string; credential: string; reason: string; until: Date },
): Promise<void> {
  // a dead row never goes back to cooling: only an operator's row deletion and a restart revive it
  await db.query(
    `INSERT INTO svc.credential_cooldowns (target, credential, state, reason, until)
     VALUES ($1, $2, 'cooling', $3, $4)
     ON CONFLICT (target, credential) DO UPDATE
       SET reason = EXCLUDED.reason, until = EXCLUDED.until, updated_at = now()
       WHERE svc.credential_cooldowns.state = 'cooling'`,
    [row.target, row.credential, row.reason, row.until],
  );
}

export async function markDead(
  db: Queryable,
  row: { target: string; credential: string; reason: string },
): Promise<void> {
  await db.query(
    `INSERT INTO svc.credential_cooldowns (target, credential, state, reason, until, dead_at)
     VALUES ($1, $2, 'dead', $3, NULL, now())
     ON CONFLICT (target, credential) DO UPDATE
       SET state = 'dead', reason = EXCLUDED.reason, until = NULL,
           dead_at = coalesce(svc.credential_cooldowns.dead_at, now()), updated_at = now()`,
    [row.target, row.credential, row.reason],
  );
}

/** A probe that got through clears a cooling row; dead rows are left to the operator. */
export async function clearCooling(db: Queryable, target: string, credential: string): Promise<void> {
  await db.query(
    "DELETE FROM svc.credential_cooldowns WHERE target = $1 AND credential = $2 AND state = 'cooling'",
    [target, credential],
  );
}

export async function dropDeadOlderThan(db: Queryable, days: number): Promise<CooldownRow[]> {
  const { rows } = await db.query<CooldownRow>(
    `DELETE FROM svc.credential_cooldowns
      WHERE state = 'dead' AND dead_at < now() - make_interval(days => $1)
      RETURNING *`,
    [days],
  );
  return rows;
}
