import { listOpenBreakers } from "../../../db/circuit-breakers.ts";
import {
  countFailedSince,
  countQueueStates,
  listQueueJobs,
  QUEUE_STATES,
  type QueueJob,
  type QueueState,
} from "../../../db/queue-jobs.ts";
import { ok } from "../context.ts";
import { parseSince, queryFlag, queryInt, queryString } from "../input.ts";
import type { Reply, RouteContext } from "../types.ts";

const DEFAULT_WINDOW = "24h";

/**
 * Counts of active, waiting, delayed and failed jobs, and how many failed within the window
 * (`since`, default the last 24h). `verbose=1` adds `details.<state>` job objects; the failed
 * history honours `since`, `limit` and `offset`, the live states only `limit`.
 */
export async function queueStatusRoute(ctx: RouteContext): Promise<Reply> {
  const now = Date.now();
  const since = parseSince(queryString(ctx.req, "since") ?? DEFAULT_WINDOW, "since", now);
  const verbose = queryFlag(ctx.req, "verbose");
  const limit = queryInt(ctx.req, "limit", 50, 1, 1000);
  const offset = queryInt(ctx.req, "offset", 0, 0, 1_000_000);
  const counts = await countQueueStates(ctx.deps.pool);
  const recentFailed = await countFailedSince(ctx.deps.pool, since);
  const body: Record<string, unknown> = {
    counts,
    recent: {
      since: since.toISOString(),
      hours: Math.round(((now - since.getTime()) / 3_600_000) * 10) / 10,
      failed: recentFailed,
    },
  };
  // pipelines whose circuit breaker is open: their new invocations wait until `openUntil`
  body.breakers = (await listOpenBreakers(ctx.deps.pool)).map((row) => ({
    pipeline: row.pipeline,
    openedAt: row.opened_at?.toISOString() ?? null,
    openUntil: row.open_until?.toISOString() ?? null,
  }));
  if (verbose) {
    const details = {} as Record<QueueState, QueueJob[]>;
    for (const state of QUEUE_STATES) {
      details[state] = await listQueueJobs(
        ctx.deps.pool,
        state,
        state === "failed" ? { limit, offset, since } : { limit, offset: 0 },
      );
    }
    body.details = details;
  }
  return ok(body);
}
