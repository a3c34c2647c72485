import { doctorRoute, drainRoute, purgeRoute, reconcileRoute, resumeRoute } from "../handlers/admin.ts";
import { queueStatusRoute } from "../handlers/queue.ts";
import type { RouteSpec } from "../types.ts";

export const ADMIN_ROUTES: readonly RouteSpec[] = [
  {
    method: "GET",
    path: "/queue/status",
    scope: "admin",
    summary:
      "active, waiting, delayed, failed counts, open circuit breakers; verbose=1 adds details.<state> jobs (since, limit, offset)",
    handler: queueStatusRoute,
    query: {
      verbose: "1 adds details.<state> jobs",
      since: "with verbose",
      limit: "with verbose",
      offset: "with verbose",
    },
    response: { description: "job counts by state", schema: "QueueStatus" },
  },
  {
    method: "POST",
    path: "/admin/drain",
    scope: "admin",
    summary: "stop workers claiming new work",
    handler: drainRoute,
  },
  {
    method: "POST",
    path: "/admin/resume",
    scope: "admin",
    summary: "undo a drain; `{ pipeline }` closes that pipeline's open circuit breaker instead",
    handler: resumeRoute,
  },
  {
    method: "POST",
    path: "/admin/reconcile",
    scope: "admin",
    summary: "give every queued trigger and queued or stale invocation a live job: `{ olderThan? }`",
    handler: reconcileRoute,
  },
  {
    method: "POST",
    path: "/admin/purge",
    scope: "admin",
    summary: "delete failed-job history finished before `before` (default now)",
    handler: purgeRoute,
  },
  {
    method: "GET",
    path: "/admin/doctor",
    scope: "admin",
    summary: "daemon probes for `svc doctor`",
    handler: doctorRoute,
  },
];
