import { createHash } from "node:crypto";
import type pg from "pg";
import { type Db, PgBoss } from "pg-boss";
import type { Logger } from "../shared/logger.ts";
import { DISPATCH_QUEUE } from "../shared/queues.ts";

export const BOSS_SCHEMA = "pgboss";

export interface BossOptions {
  url: string;
  /** connections pg-boss may hold for itself */
  max?: number;
  /** run pg-boss's maintenance (expiry, retention, queue stats); the ingress only sends, so it passes false */
  supervise?: boolean;
  schedule?: boolean;
  /** how often pg-boss's scheduler looks for due schedules (1-45 s; pg-boss's default is 30) */
  cronMonitorIntervalSeconds?: number;
  /**
   * how often the supervisor fails jobs whose heartbeat or expiry ran out (pg-boss's monitor and
   * supervise intervals; its default is 60 s). Workers set it from `worker.heartbeat`.
   */
  monitorIntervalSeconds?: number;
  /** where pg-boss's `error` and `warning` events go (`boss.error`, `boss.warning`) */
  logger?: Pick<Logger, "warn" | "error">;
}

/**
 * A started pg-boss on svc's schema. svc's workers do not use pg-boss's own LISTEN (they LISTEN on
 * WAKE_CHANNEL, see wakeWorkers), so `useListenNotify` stays off and polling by `fetch` is the
 * backstop. pg-boss reports a lost connection or a failed maintenance run as an `error` event; an
 * `error` event without a listener would end the process, so both kinds are logged here instead.
 */
export async function startBoss(options: BossOptions): Promise<PgBoss> {
  const boss = new PgBoss({
    connectionString: options.url,
    schema: BOSS_SCHEMA,
    max: options.max ?? 4,
    useListenNotify: false,
    supervise: options.supervise ?? true,
    schedule: options.schedule ?? false,
    ...(options.cronMonitorIntervalSeconds
      ? { cronMonitorIntervalSeconds: options.cronMonitorIntervalSeconds }
      : {}),
    ...(options.monitorIntervalSeconds
      ? {
          monitorIntervalSeconds: options.monitorIntervalSeconds,
          superviseIntervalSeconds: options.monitorIntervalSeconds,
        }
      : {}),
    migrate: true,
    application_name: "svc-boss",
  });
  const logger = options.logger;
  boss.on("error", (error) => {
    // without a logger (tests, one-shot CLI calls) the next query reports the same failure to its caller
    logger?.error("pg-boss reported an error", { event: "boss.error", error: (error as Error).message });
  });
  boss.on("warning", (warning) => {
    logger?.warn("pg-boss reported a warning", {
      event: "boss.warning",
      message: warning.message,
      data: warning.data,
    });
  });
  await boss.start();
  await ensureQueue(boss, DISPATCH_QUEUE, { notify: false });
  // a dispatch queue created by an earlier version still NOTIFYs inside every send's transaction
  if ((await boss.getQueue(DISPATCH_QUEUE))?.notify)
    await boss.updateQueue(DISPATCH_QUEUE, { notify: false });
  return boss;
}

/**
 * svc's own wake-up channel: the payload names the queue that got jobs. Workers LISTEN on it through
 * pg-boss's public `getDb().listen` (which reconnects and reports a reconnect so a worker looks at
 * every queue). It is svc's channel, not pg-boss's, so no pg-boss internals are relied on.
 */
export const WAKE_CHANNEL = "svc_queue_wake";

const wakers = new WeakMap<PgBoss, Map<string, { inFlight: boolean; again: boolean; startedAt: number }>>();

/** Under a stream of jobs, at most one NOTIFY per queue per this many milliseconds. */
const WAKE_SPACING_MS = 20;

/**
 * Wakes the workers LISTENing for `queue`, after the transaction that sent its jobs has committed.
 *
 * Why not pg-boss's per-queue `notify`: it runs pg_notify inside the sending transaction, and
 * Postgres serialises every committing transaction that has notified on one cluster-wide lock held
 * through its WAL flush, so concurrent webhook commits queue up behind each other's fsync (measured
 * by bench/ingress.bench.ts: 183 against 308 accepted webhooks per second). A NOTIFY in its own
 * transaction writes no WAL, so it holds that lock only for an instant. Calls coalesce: one NOTIFY
 * per queue is in flight at a time, spaced at least WAKE_SPACING_MS apart, and a call made meanwhile
 * causes one more after it, so a job committed before any call is always followed by a NOTIFY that
 * starts after it. Best effort: polling picks the job up if a NOTIFY is lost.
 */
export function wakeWorkers(boss: PgBoss, queue: string): void {
  let byQueue = wakers.get(boss);
  if (!byQueue) {
    byQueue = new Map();
    wakers.set(boss, byQueue);
  }
  let state = byQueue.get(queue);
  if (!state) {
    state = { inFlight: false, again: false, startedAt: 0 };
    byQueue.set(queue, state);
  }
  if (state.inFlight) {
    state.again = true;
    return;
  }
  const current = state;
  current.inFlight = true;
  current.startedAt = Date.now();
  void boss
    .getDb()
    .executeSql("SELECT pg_notify($1, $2)", [WAKE_CHANNEL, queue])
    // best effort by design: the workers' poll finds the job if this NOTIFY is lost
    .catch(() => {})
    .finally(() => {
      if (!current.again) {
        current.inFlight = false;
        return;
      }
      current.again = false;
      // still "in flight" while spaced out, so calls in the meantime fold into this next NOTIFY
      setTimeout(
        () => {
          current.inFlight = false;
          wakeWorkers(boss, queue);
        },
        Math.max(0, current.startedAt + WAKE_SPACING_MS - Date.now()),
      ).unref();
    });
}

/**
 * Creates a queue once, with its retry and expiry policy. `notify` is off for svc's queues: pg-boss's
 * per-queue notify would NOTIFY inside every sending transaction (see wakeWorkers).
 */
export async function ensureQueue(
  boss: PgBoss,
  name: string,
  options: { retryLimit?: number; expireInSeconds?: number; notify?: boolean; deadLetter?: string } = {},
) {
  const existing = await boss.getQueue(name);
  if (existing) return;
  try {
    await boss.createQueue(name, {
      notify: options.notify ?? false,
      retryLimit: options.retryLimit ?? 3,
      retryDelay: 1,
      retryBackoff: true,
      expireInSeconds: options.expireInSeconds ?? 3600,
      ...(options.deadLetter ? { deadLetter: options.deadLetter } : {}),
    });
  } catch (error) {
    // another process created it between our check and our create
    if (!(await boss.getQueue(name))) throw error;
  }
}

/**
 * A target's lane queue. Whichever process needs it first creates it (worker start-up, the API's
 * submit and reconcile routes), and pg-boss keeps the first creator's options, so they all create
 * it here, alike: no per-send NOTIFY (senders call wakeWorkers after commit), and an expiry past
 * the longest target timeout so a long agent run is never expired under its worker.
 */
export async function ensureLaneQueue(
  boss: PgBoss,
  name: string,
  targets: Readonly<Record<string, { timeoutMs: number }>>,
): Promise<void> {
  const longest = Math.max(60_000, ...Object.values(targets).map((target) => target.timeoutMs));
  await ensureQueue(boss, name, {
    retryLimit: 5,
    expireInSeconds: Math.ceil(longest / 1000) + 600,
    notify: false,
  });
}

/**
 * Lets `boss.send(..., { db })` join a transaction we opened on our own client.
 * `prepare: true` runs each statement as a named prepared statement, so Postgres parses and plans
 * pg-boss's statements once per connection instead of once per job: a run's path sends, fetches and
 * completes several jobs, and planning each cost Postgres about 0.2 ms. Only for the single-statement
 * job calls on that path (send, insert, fetch, complete), whose SQL text is fixed per call site and
 * queue; every distinct text stays prepared for the connection's life, so past PREPARED_TEXTS
 * distinct texts a statement runs unnamed.
 */
export function transactionDb(client: pg.ClientBase, options: { prepare?: boolean } = {}): Db {
  return {
    executeSql: async (text, values) => {
      const name = options.prepare ? statementName(text) : undefined;
      const result = name
        ? await client.query({ name, text, values: values as unknown[] })
        : await client.query(text, values as unknown[]);
      return { rows: result.rows };
    },
  };
}

/** Bound on the texts prepared: a call site whose text varied with its input must not grow it forever. */
export const PREPARED_TEXTS = 200;

const statementNames = new Map<string, string>();

function statementName(text: string): string | undefined {
  let name = statementNames.get(text);
  if (!name && statementNames.size < PREPARED_TEXTS) {
    name = `boss_${createHash("sha1").update(text).digest("hex").slice(0, 20)}`;
    statementNames.set(text, name);
  }
  return name;
}
