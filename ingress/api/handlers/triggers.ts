import {
  getTrigger,
  InvalidCursorError,
  listTriggers,
  TRIGGER_STATS_DIMENSIONS,
  type TriggerStatus,
  triggerStats,
} from "../../../db/triggers.ts";
import { ok } from "../context.ts";
import { badRequest, notFound } from "../errors.ts";
import { pathParam, queryInt, querySince, queryString } from "../input.ts";
import type { Reply, RouteContext } from "../types.ts";

export const TRIGGER_STATUSES: readonly TriggerStatus[] = [
  "queued",
  "running",
  "completed",
  "error",
  "discarded",
];
const CODE = /^[a-z][a-z0-9_]*$/;

export function parseStatus(text: string | undefined): TriggerStatus | undefined {
  if (text === undefined) return undefined;
  if (text === "timeout") {
    throw badRequest(
      'status "timeout" no longer exists: a timed-out run is status "error" with code "agent_timeout" (use status=error&code=agent_timeout)',
    );
  }
  if (!(TRIGGER_STATUSES as readonly string[]).includes(text)) {
    throw badRequest(`status must be one of ${TRIGGER_STATUSES.join(", ")}`);
  }
  return text as TriggerStatus;
}

function parseFilter(ctx: RouteContext) {
  const status = parseStatus(queryString(ctx.req, "status"));
  const code = queryString(ctx.req, "code");
  if (code !== undefined && !CODE.test(code))
    throw badRequest("code must be a diagnostic code such as agent_timeout");
  const source = queryString(ctx.req, "source");
  if (source !== undefined && !source) throw badRequest("source must not be empty");
  const since = querySince(ctx.req);
  return {
    ...(status ? { status } : {}),
    ...(code ? { code } : {}),
    ...(source ? { source } : {}),
    ...(since ? { since } : {}),
  };
}

export async function listTriggersRoute(ctx: RouteContext): Promise<Reply> {
  const filter = parseFilter(ctx);
  const limit = queryInt(ctx.req, "limit", 50, 1, 500);
  const cursor = queryString(ctx.req, "cursor");
  try {
    const page = await listTriggers(ctx.deps.pool, { ...filter, limit, ...(cursor ? { cursor } : {}) });
    return ok(page);
  } catch (error) {
    if (error instanceof InvalidCursorError) throw badRequest(error.message);
    throw error;
  }
}

export async function triggerStatsRoute(ctx: RouteContext): Promise<Reply> {
  const filter = parseFilter(ctx);
  const by = queryString(ctx.req, "by") ?? "code";
  if (!(by in TRIGGER_STATS_DIMENSIONS)) {
    throw badRequest(`by must be one of ${Object.keys(TRIGGER_STATS_DIMENSIONS).join(", ")}`);
  }
  const groups = await triggerStats(ctx.deps.pool, filter, by as keyof typeof TRIGGER_STATS_DIMENSIONS);
  return ok({
    by,
    filter,
    total: groups.reduce((sum, group) => sum + group.count, 0),
    groups: groups.map((group) => ({ [by]: group.key, count: group.count })),
  });
}

export async function getTriggerRoute(ctx: RouteContext): Promise<Reply> {
  const found = await getTrigger(ctx.deps.pool, pathParam(ctx.req, "id"));
  if (!found) throw notFound("trigger");
  // the worker's own record of who wrote the event; the contract's trigger has no such field
  const { authorAssociation: _author, ...trigger } = found;
  return ok({ trigger });
}
