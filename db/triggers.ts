import type { Diagnostic } from "../shared/diagnostics.ts";
import { newId } from "../shared/ids.ts";
import type { Queryable } from "./queryable.ts";

/** Queries of `svc.triggers`. Column names are operator-facing API; these functions only alias them. */

export type TriggerKind = "webhook" | "codehost" | "tracker" | "manual" | "schedule" | "replay";
export type TriggerStatus = "queued" | "running" | "completed" | "error" | "discarded";

export interface NewTrigger {
  kind: TriggerKind;
  /** the route name (webhook source) or the origin of a non-webhook trigger */
  source: string;
  eventName: string;
  /** the caller's delivery id; a second insert with the same (source, deliveryId) creates nothing */
  deliveryId: string | null;
  /** the payload as JSON text, stored as sent (Postgres normalises it to jsonb) */
  payloadJson: string;
  owner?: string | null;
  replayOf?: string | null;
  /** its runs publish nothing: what they would post is recorded as their artifact (migration 100) */
  holdOutputs?: boolean;
}

export interface TriggerSummary {
  id: string;
  kind: TriggerKind;
  source: string;
  eventName: string;
  deliveryId: string | null;
  status: TriggerStatus;
  diagnostic: Diagnostic | null;
  owner: string | null;
  replayOf: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface Trigger extends TriggerSummary {
  payload: unknown;
  /** the author's association dispatch established (GitLab), see db/trigger-status.ts */
  authorAssociation?: "owner" | "member" | "none" | null;
}

const SUMMARY_COLUMNS = `id, kind, source, event_name AS "eventName", delivery_id AS "deliveryId", status,
  diagnostic, owner, replay_of AS "replayOf", created_at AS "createdAt", updated_at AS "updatedAt"`;

/**
 * Inserts a trigger, or finds the one an earlier delivery with the same id created.
 * Run it in the transaction that sends the dispatch job, and send only when `created`: a redelivery
 * waits on the first insert's row lock, then sees its committed row, so it never sends a second job.
 */
export async function insertTrigger(
  db: Queryable,
  trigger: NewTrigger,
): Promise<{ id: string; created: boolean }> {
  return (await insertTriggers(db, [trigger]))[0]!;
}

/**
 * insertTrigger for many triggers in one statement, answered in their order. Two of them with the
 * same source and delivery id are one delivery: the first is created, the second finds it.
 */
export async function insertTriggers(
  db: Queryable,
  triggers: readonly NewTrigger[],
): Promise<{ id: string; created: boolean }[]> {
  const ids = triggers.map(() => newId("trigger"));
  const inserted = await db.query<{ id: string }>({
    // prepared once per connection: this runs for every accepted webhook
    name: "svc_insert_triggers",
    text: `INSERT INTO svc.triggers (id, kind, source, event_name, delivery_id, payload, owner, replay_of, hold_outputs)
       SELECT t.id, t.kind, t.source, t.event_name, t.delivery_id, t.payload::jsonb, t.owner, t.replay_of, t.hold
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
                     $9::boolean[])
              WITH ORDINALITY AS t(id, kind, source, event_name, delivery_id, payload, owner, replay_of, hold, n)
        ORDER BY t.n
       ON CONFLICT (source, delivery_id) WHERE delivery_id IS NOT NULL DO NOTHING
       RETURNING id`,
    values: [
      ids,
      triggers.map((t) => t.kind),
      triggers.map((t) => t.source),
      triggers.map((t) => t.eventName),
      triggers.map((t) => t.deliveryId),
      triggers.map((t) => t.payloadJson),
      triggers.map((t) => t.owner ?? null),
      triggers.map((t) => t.replayOf ?? null),
      triggers.map((t) => t.holdOutputs ?? false),
    ],
  });
  const created = new Set(inserted.rows.map((row) => row.id));
  if (created.size === triggers.length) return ids.map((id) => ({ id, created: true }));
  // redeliveries: the trigger their delivery id names, created before or earlier in this batch
  const repeated = triggers.filter((_, index) => !created.has(ids[index]!));
  const { rows } = await db.query<{ id: string; source: string; delivery_id: string }>(
    `SELECT id, source, delivery_id FROM svc.triggers
      WHERE (source, delivery_id) IN (SELECT * FROM unnest($1::text[], $2::text[]))`,
    [repeated.map((t) => t.source), repeated.map((t) => t.deliveryId)],
  );
  const first = new Map(rows.map((row) => [JSON.stringify([row.source, row.delivery_id]), row.id]));
  return triggers.map((trigger, index) => {
    const id = ids[index]!;
    if (created.has(id)) return { id, created: true };
    const earlier = first.get(JSON.stringify([trigger.source, trigger.deliveryId]));
    if (!earlier)
      throw new Error(`trigger insert for ${trigger.source} conflicted but no earlier trigger exists`);
    return { id: earlier, created: false };
  });
}

export async function getTrigger(db: Queryable, id: string): Promise<Trigger | undefined> {
  const { rows } = await db.query<Trigger>({
    name: "svc_get_trigger",
    text: `SELECT ${SUMMARY_COLUMNS}, payload, author_association AS "authorAssociation" FROM svc.triggers WHERE id = $1`,
    values: [id],
  });
  return rows[0];
}

export interface TriggerFilter {
  status?: TriggerStatus;
  /** diagnostic code */
  code?: string;
  source?: string;
  /** only triggers created at or after this instant */
  since?: Date;
  /** default 50, at most 500 */
  limit?: number;
  /** `nextCursor` of the previous page */
  cursor?: string;
}

export const MAX_LIST_LIMIT = 500;

export class InvalidCursorError extends Error {}

/** The WHERE clauses (and their parameters) that the list and the stats of triggers share. */
function filterClauses(filter: Omit<TriggerFilter, "limit" | "cursor">): {
  where: string[];
  values: unknown[];
} {
  const where: string[] = [];
  const values: unknown[] = [];
  const add = (clause: (placeholder: string) => string, value: unknown) => {
    values.push(value);
    where.push(clause(`$${values.length}`));
  };
  if (filter.status) add((p) => `status = ${p}`, filter.status);
  if (filter.code) add((p) => `diagnostic->>'code' = ${p}`, filter.code);
  if (filter.source) add((p) => `source = ${p}`, filter.source);
  if (filter.since) add((p) => `created_at >= ${p}`, filter.since);
  return { where, values };
}

/** Newest first, without payloads; pages by keyset on (created_at, id), which an index serves. */
export async function listTriggers(
  db: Queryable,
  filter: TriggerFilter = {},
): Promise<{ triggers: TriggerSummary[]; nextCursor: string | null }> {
  const limit = Math.min(Math.max(Math.trunc(filter.limit ?? 50), 1), MAX_LIST_LIMIT);
  const { where, values } = filterClauses(filter);
  if (filter.cursor) {
    const { createdAt, id } = decodeCursor(filter.cursor);
    values.push(createdAt, id);
    where.push(`(created_at, id) < ($${values.length - 1}::timestamptz, $${values.length})`);
  }
  values.push(limit + 1);
  const { rows } = await db.query<TriggerSummary & { cursorTime: string }>(
    `SELECT ${SUMMARY_COLUMNS}, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS "cursorTime"
     FROM svc.triggers ${where.length ? `WHERE ${where.join(" AND ")}` : ""}
     ORDER BY created_at DESC, id DESC LIMIT $${values.length}`,
    values,
  );
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  const nextCursor = rows.length > limit && last ? encodeCursor(last.cursorTime, last.id) : null;
  return { triggers: page.map(({ cursorTime: _, ...summary }) => summary), nextCursor };
}

// microsecond text, not a JS Date: Dates keep milliseconds and would skip or repeat rows at page edges
function encodeCursor(createdAt: string, id: string): string {
  return Buffer.from(`${createdAt}|${id}`, "utf8").toString("base64url");
}

function decodeCursor(cursor: string): { createdAt: string; id: string } {
  const [createdAt, id, ...rest] = Buffer.from(cursor, "base64url").toString("utf8").split("|");
  if (!createdAt || !id || rest.length || Number.isNaN(Date.parse(createdAt))) {
    throw new InvalidCursorError("the cursor is not one this server returned; start again without it");
  }
  return { createdAt, id };
}

/** Triggers' statuses in one statement (a dispatch batch sets those of all its triggers at once). */
export async function setTriggerStatuses(
  db: Queryable,
  rows: { id: string; status: TriggerStatus; diagnostic: Diagnostic | null }[],
): Promise<void> {
  if (rows.length === 0) return;
  await db.query(
    `UPDATE svc.triggers t SET status = s.status, diagnostic = s.diagnostic, updated_at = now()
       FROM unnest($1::text[], $2::text[], $3::jsonb[]) AS s(id, status, diagnostic) WHERE t.id = s.id`,
    [
      rows.map((row) => row.id),
      rows.map((row) => row.status),
      rows.map((row) => (row.diagnostic ? JSON.stringify(row.diagnostic) : null)),
    ],
  );
}

/** What `svc trigger stats --by` can group on, mapped to the grouped expression. */
export const TRIGGER_STATS_DIMENSIONS = {
  code: "diagnostic->>'code'",
  source: "source",
  kind: "kind",
} as const;
export type TriggerStatsDimension = keyof typeof TRIGGER_STATS_DIMENSIONS;

/** Counts of the triggers matching `filter` (limit and cursor ignored), grouped by one dimension. */
export async function triggerStats(
  db: Queryable,
  filter: Omit<TriggerFilter, "limit" | "cursor">,
  by: TriggerStatsDimension,
): Promise<{ key: string | null; count: number }[]> {
  const { where, values } = filterClauses(filter);
  const { rows } = await db.query<{ key: string | null; count: string }>(
    `SELECT ${TRIGGER_STATS_DIMENSIONS[by]} AS key, count(*) AS count
     FROM svc.triggers ${where.length ? `WHERE ${where.join(" AND ")}` : ""}
     GROUP BY 1 ORDER BY 2 DESC, 1 NULLS LAST`,
    values,
  );
  return rows.map((row) => ({ key: row.key, count: Number(row.count) }));
}
