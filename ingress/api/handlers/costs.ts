import { COST_GROUPS, type CostGroup, type CostRow, costsBy, costsPerDay } from "../../../db/costs.ts";
import { ok } from "../context.ts";
import { badRequest } from "../errors.ts";
import { parseSince, queryString } from "../input.ts";
import type { Reply, RouteContext } from "../types.ts";

/** `since` when the caller gives none: the window people ask "what did it cost" about. */
export const DEFAULT_COST_SINCE = "30d";

/** `by` and `since` of a costs request (the API's and /ui/costs's), or a 400 naming the fix. */
export function costQuery(by: string | undefined, since: string | undefined): { by: CostGroup; since: Date } {
  const group = by ?? "pipeline";
  if (!(COST_GROUPS as readonly string[]).includes(group))
    throw badRequest(`"by" must be one of ${COST_GROUPS.join(", ")}`);
  return { by: group as CostGroup, since: parseSince(since ?? DEFAULT_COST_SINCE) };
}

/** The sums of `rows`; cost stays null when no row had a priced target. */
export function costTotal(rows: readonly Omit<CostRow, "key">[]) {
  const priced = rows.filter((row) => row.costUsd !== null);
  return {
    runs: rows.reduce((n, row) => n + row.runs, 0),
    inputTokens: rows.reduce((n, row) => n + row.inputTokens, 0),
    outputTokens: rows.reduce((n, row) => n + row.outputTokens, 0),
    costUsd: priced.length ? priced.reduce((n, row) => n + (row.costUsd ?? 0), 0) : null,
  };
}

/**
 * `GET /costs?by=repo|pipeline|author&since=30d`: tokens and USD of the agent tasks started in the
 * window, per group and per day (UTC). Read from the tasks' usage as the worker's gateway recorded
 * it; a group without any priced target has `costUsd: null`.
 */
export async function costsRoute(ctx: RouteContext): Promise<Reply> {
  const { by, since } = costQuery(queryString(ctx.req, "by"), queryString(ctx.req, "since"));
  const [rows, days] = await Promise.all([
    costsBy(ctx.deps.pool, by, since),
    costsPerDay(ctx.deps.pool, since),
  ]);
  const tokens = (row: { inputTokens: number; outputTokens: number }) => row.inputTokens + row.outputTokens;
  return ok({
    by,
    since: since.toISOString(),
    total: { ...costTotal(rows), tokens: tokens(costTotal(rows)) },
    rows: rows.map((row) => ({ ...row, tokens: tokens(row) })),
    days: days.map((day) => ({ ...day, tokens: tokens(day) })),
  });
}
