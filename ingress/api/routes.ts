import { ADMIN_ROUTES } from "./routes/admin.ts";
import { BACKTEST_ROUTES } from "./routes/backtests.ts";
import { EVAL_ROUTES } from "./routes/evals.ts";
import { IDENTITY_ROUTES } from "./routes/identity.ts";
import { KNOWLEDGE_ROUTES } from "./routes/knowledge.ts";
import { REPO_ROUTES } from "./routes/repos.ts";
import { TOOL_ROUTES } from "./routes/tools.ts";
import { TRIGGER_ROUTES } from "./routes/triggers.ts";
import { WORKLOAD_ROUTES } from "./routes/workloads.ts";
import type { RouteSpec } from "./types.ts";

/**
 * THE route table of the daemon API: path, method, required scope and handler. The router mounts
 * exactly these, the scope section of docs/api.md is rendered from them, and the scope-matrix test
 * walks them, so access control cannot drift from what is served. `/` and `/health` (no scope)
 * belong to the ingress app, the webhook routes to their own verification.
 */
export const API_ROUTES: readonly RouteSpec[] = [
  // in this order: express takes the first path that matches (`/triggers/stats` before
  // `/triggers/:id`), and docs/api.md and docs/openapi.json list the routes as here
  ...IDENTITY_ROUTES,
  ...TRIGGER_ROUTES,
  ...WORKLOAD_ROUTES,
  ...KNOWLEDGE_ROUTES,
  ...REPO_ROUTES,
  // before EVAL_ROUTES: its `/evals/:id` would take `/evals/backtests`
  ...BACKTEST_ROUTES,
  ...EVAL_ROUTES,
  ...ADMIN_ROUTES,
  ...TOOL_ROUTES,
];

/** Removed in earlier releases; they answer 404 with the replacement. `POST /events` stays a webhook alias. */
export const REMOVED_ROUTES: readonly { method: "GET"; path: string; replacement: string }[] = [
  { method: "GET", path: "/events", replacement: "GET /triggers" },
  { method: "GET", path: "/events/stats", replacement: "GET /triggers/stats" },
  { method: "GET", path: "/events/:id", replacement: "GET /triggers/:id" },
  { method: "GET", path: "/events/:id/fields", replacement: "GET /triggers/:id" },
];

/** The scopes a request to `route` needs, every one of them, with `<name>` filled from the path parameters. */
export function requiredScopes(route: RouteSpec, params: Record<string, string | undefined>): string[] {
  const first = route.scope === "host:execute:<name>" ? `host:execute:${params.name ?? ""}` : route.scope;
  return route.alsoScope ? [first, route.alsoScope] : [first];
}
