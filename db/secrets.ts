import { openSecret, sealSecret } from "../shared/secrets/cipher.ts";
import type { Queryable } from "./queryable.ts";

/**
 * Queries of `svc.secrets`. Values are sealed here, before any SQL is built, so plaintext never
 * reaches the database, its logs or its replication stream.
 */

export async function putSecret(db: Queryable, key: Buffer, name: string, plaintext: string): Promise<void> {
  await db.query(
    `INSERT INTO svc.secrets (name, ciphertext) VALUES ($1, $2)
     ON CONFLICT (name) DO UPDATE SET ciphertext = EXCLUDED.ciphertext, updated_at = now()`,
    [name, sealSecret(key, name, plaintext)],
  );
}

/** Decrypted values of the named secrets; names the table lacks are absent from the map. */
export async function readSecrets(
  db: Queryable,
  key: Buffer,
  names: readonly string[],
): Promise<Map<string, string>> {
  const { rows } = await db.query<{ name: string; ciphertext: Buffer }>(
    "SELECT name, ciphertext FROM svc.secrets WHERE name = ANY($1::text[])",
    [names],
  );
  return new Map(rows.map((row) => [row.name, openSecret(key, row.name, row.ciphertext)]));
}

export async function listSecretNames(db: Queryable): Promise<{ name: string; updatedAt: Date }[]> {
  const { rows } = await db.query<{ name: string; updatedAt: Date }>(
    `SELECT name, updated_at AS "updatedAt" FROM svc.secrets ORDER BY name`,
  );
  return rows;
}

export async function deleteSecret(db: Queryable, name: string): Promise<boolean> {
  const { rowCount } = await db.query("DELETE FROM svc.secrets WHERE name = $1", [name]);
  return (rowCount ?? 0) > 0;
}
