import type { NextFunction, Request, Response } from "express";
import { Counter, Histogram, Registry } from "prom-client";

/**
 * The ingress's Prometheus metrics. Labels are bounded by construction: `route` is the route
 * PATTERN (`/triggers/:id`, `/webhooks/:name`), never the concrete path, and no label carries an
 * id, a token or a payload value, so a caller cannot grow the series count.
 */
export interface IngressMetrics {
  registry: Registry;
  /** the middleware that counts every answered request */
  observe: (req: Request, res: Response, next: NextFunction) => void;
}

/** Requests no route claimed (404s of unknown paths) share one label value. */
export const UNMATCHED_ROUTE = "unmatched";

export function createIngressMetrics(): IngressMetrics {
  const registry = new Registry();
  const requests = new Counter({
    name: "svc_http_requests_total",
    help: "HTTP requests answered by the ingress, by method, route pattern and status code",
    labelNames: ["method", "route", "status"] as const,
    registers: [registry],
  });
  const unauthorized = new Counter({
    name: "svc_http_unauthorized_total",
    help: "requests answered 401 (missing, malformed or unknown credentials), by route pattern",
    labelNames: ["route"] as const,
    registers: [registry],
  });
  const storeFailures = new Counter({
    name: "svc_http_store_failures_total",
    help: "requests answered 503 because the database was unreachable, by route pattern",
    labelNames: ["route"] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: "svc_http_request_duration_seconds",
    help: "time from request to answer, by method and route pattern",
    labelNames: ["method", "route"] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });

  const observe = (req: Request, res: Response, next: NextFunction) => {
    const stop = duration.startTimer();
    res.on("finish", () => {
      const route = routePattern(res.locals.route);
      const method = req.method === "GET" || req.method === "POST" ? req.method : "other";
      requests.inc({ method, route, status: String(res.statusCode) });
      stop({ method, route });
      if (res.statusCode === 401) unauthorized.inc({ route });
      if (res.statusCode === 503) storeFailures.inc({ route });
    });
    next();
  };
  return { registry, observe };
}

/**
 * `res.locals.route` as a label value. The webhook intake names its route after the source
 * (`webhooks/deploy-hook`), which a caller chooses, so every webhook route folds into one pattern.
 */
export function routePattern(route: unknown): string {
  if (typeof route !== "string" || route === "") return UNMATCHED_ROUTE;
  if (route === "events") return "/events";
  if (route.startsWith("webhooks/")) return "/webhooks/:name";
  return route;
}
