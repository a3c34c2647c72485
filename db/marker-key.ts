import { createHmac, randomBytes } from "node:crypto";
import type { Queryable } from "./queryable.ts";

/**
 * The key svc seals its markers with (`<!-- svc:<invocation>:<key>:<seal> -->`, worker/outputs/render.ts):
 * 32 random bytes made once per installation and kept in `svc.daemon_state`, shared by every worker.
 * An invocation's id is public (the progress line links its trace), so a marker without a seal is
 * one anyone can write into a comment of their own; with it, only svc can. Kept in the database
 * rather than derived from the instance key, which an installation without stored secrets lacks.
 */
const keys = new WeakMap<object, Promise<Buffer>>();

async function markerKey(db: Queryable): Promise<Buffer> {
  // the first worker's bytes win; the others read them
  await db.query(
    `INSERT INTO svc.daemon_state (key, value) VALUES ('marker-key', jsonb_build_object('key', $1::text))
     ON CONFLICT (key) DO NOTHING`,
    [randomBytes(32).toString("base64")],
  );
  const { rows } = await db.query<{ key: string }>(
    "SELECT value->>'key' AS key FROM svc.daemon_state WHERE key = 'marker-key'",
  );
  return Buffer.from(rows[0]!.key, "base64");
}

/** The seal of `invocation`'s markers: 16 characters of its HMAC under the marker key. */
export async function invocationSeal(db: Queryable, invocation: string): Promise<string> {
  let key = keys.get(db);
  if (!key) {
    key = markerKey(db);
    keys.set(db, key);
    // a failed read is not kept: the next publish asks again
    key.catch(() => keys.delete(db));
  }
  return createHmac("sha256", await key)
    .update(invocation)
    .digest("base64url")
    .slice(0, 16);
}
