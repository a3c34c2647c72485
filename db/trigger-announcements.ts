import type { PgBoss } from "pg-boss";
import { isIdOf } from "../shared/ids.ts";
import { DISPATCH_QUEUE } from "../shared/queues.ts";
import { WAKE_SPACING_MS, wakeWorkers } from "./boss.ts";

/**
 * A stored trigger announced to the workers, so the first one with a free slot dispatches it at
 * once instead of fetching its dispatch job first (see the claim loop in worker/worker.ts). It
 * names the trigger's kind, source and event name, which for most triggers decide the pipelines
 * it fires without reading its payload. The job stays the durable record: whoever dispatches the
 * trigger completes it afterwards, and a lost announcement leaves the job to be fetched as before.
 * A JSON object `{ t, j, k, s, e }`: trigger id, job id, kind, source, event name.
 */
export const TRIGGER_CHANNEL = "svc_trigger";

export interface TriggerAnnouncement {
  triggerId: string;
  jobId: string;
  kind: string;
  source: string;
  eventName: string;
}

export function announcementPayload(announcement: TriggerAnnouncement): string {
  const { triggerId: t, jobId: j, kind: k, source: s, eventName: e } = announcement;
  return JSON.stringify({ t, j, k, s, e });
}

/** The same payload built in SQL from a trigger row's columns, for a NOTIFY in its INSERT. */
export function announcementPayloadSql(
  row: { id: string; kind: string; source: string; eventName: string },
  jobId: string,
) {
  return `json_build_object('t', ${row.id}, 'j', ${jobId}, 'k', ${row.kind}, 's', ${row.source}, 'e', ${row.eventName})::text`;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** undefined for anything that is not an announcement this version sends */
export function parseAnnouncement(payload: string): TriggerAnnouncement | undefined {
  let value: unknown;
  try {
    value = JSON.parse(payload);
  } catch {
    return undefined;
  }
  const { t, j, k, s, e } = (value ?? {}) as Record<string, unknown>;
  if (typeof t !== "string" || !isIdOf("trigger", t) || typeof j !== "string" || !UUID.test(j))
    return undefined;
  if (typeof k !== "string" || typeof s !== "string" || typeof e !== "string") return undefined;
  return { triggerId: t, jobId: j, kind: k, source: s, eventName: e };
}

const announcing = new WeakMap<PgBoss, { inFlight: boolean; startedAt: number }>();

/**
 * After the trigger's transaction committed: announces it, or, while an announcement of this
 * process is still on its way or was sent less than WAKE_SPACING_MS ago (a stream of webhooks, so
 * the workers are busy and fetch in batches anyway), falls back to the coalesced wake-up of the
 * dispatch queue, so a stream costs a NOTIFY every few milliseconds, not one per webhook.
 */
export function announceTrigger(boss: PgBoss, announcement: TriggerAnnouncement): void {
  let state = announcing.get(boss);
  if (!state) {
    state = { inFlight: false, startedAt: Number.NEGATIVE_INFINITY };
    announcing.set(boss, state);
  }
  const now = Date.now();
  if (state.inFlight || now - state.startedAt < WAKE_SPACING_MS) {
    wakeWorkers(boss, DISPATCH_QUEUE);
    return;
  }
  const current = state;
  current.inFlight = true;
  current.startedAt = now;
  void boss
    .getDb()
    .executeSql("SELECT pg_notify($1, $2)", [TRIGGER_CHANNEL, announcementPayload(announcement)])
    .catch(() => wakeWorkers(boss, DISPATCH_QUEUE))
    .finally(() => {
      current.inFlight = false;
    });
}
