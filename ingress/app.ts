import express, { type NextFunction, type Request, type Response } from "express";
import type pg from "pg";
import type { PgBoss } from "pg-boss";
import { pingDatabase } from "../db/connect.ts";
import packageJson from "../package.json" with { type: "json" };
import type { SecretSource } from "../shared/config/secret-source.ts";
import type { ConfigSnapshot } from "../shared/config/types.ts";
import type { Knowledge } from "../shared/knowledge/service.ts";
import type { Logger } from "../shared/logger.ts";
import { buildOpenApi } from "./api/openapi.ts";
import { createApiRouter } from "./api/router.ts";
import { trustProxy } from "./auth/client.ts";
import { sendError, sendUnavailable } from "./errors.ts";
import { createIngressMetrics, type IngressMetrics } from "./metrics.ts";
import { createMetricsRoute } from "./metrics-route.ts";
import { createUiRouter } from "./ui/router.ts";
import { createGithubSetupRouter } from "./ui/setup-github.ts";
import { createWebhookRouter } from "./webhooks/intake.ts";
import { buildSourceTable } from "./webhooks/sources.ts";

export interface IngressDependencies {
  config: Readonly<ConfigSnapshot>;
  pool: pg.Pool;
  boss: PgBoss;
  logger: Logger;
  /** inline secrets as configured, stored ones decrypted at start-up */
  resolveSecret: (source: SecretSource) => string;
  /** the knowledge opened at start-up (POST /ask, GET /knowledge) */
  knowledge?: Knowledge;
  /** milliseconds since the epoch, for the tracker's timestamp window */
  now?: () => number;
  /** this process's metrics registry; tests pass their own to read the counters */
  metrics?: IngressMetrics;
  /** the instance key file (`svc setup github` stores the App's secrets with it); default `<config dir>/instance.key` */
  instanceKeyPath?: string;
}

export function createIngressApp(deps: IngressDependencies): express.Express {
  const app = express();
  // framework headers would make otherwise identical 401s differ (ETag) or advertise the stack
  app.disable("x-powered-by");
  app.set("etag", false);
  app.set("query parser", "simple");
  // `req.ip` and `req.secure` believe forwarding headers only from `server.trusted_proxies`
  app.set("trust proxy", trustProxy(deps.config.server.trustedProxies));

  app.use(requestLog(deps.logger));
  const metrics = deps.metrics ?? createIngressMetrics();
  app.use(metrics.observe);
  // ahead of the other routes because it carries nearly all the traffic: none of them matches
  // POST /webhooks/* or POST /events, yet each would be tried, and missed, on every delivery
  app.use(
    createWebhookRouter({
      sources: buildSourceTable(deps.config.webhooks.sources, deps.resolveSecret),
      pool: deps.pool,
      boss: deps.boss,
      maxBodyBytes: deps.config.webhooks.maxBodyBytes,
      logger: deps.logger,
      now: deps.now,
    }),
  );

  app.get("/", (_req, res) => {
    res.locals.route = "/";
    res.json({ service: "svc", version: packageJson.version });
  });
  app.get("/health", async (_req, res) => {
    res.locals.route = "/health";
    try {
      await pingDatabase(deps.pool);
      res.json({ status: "ok", database: "ok" });
    } catch {
      sendUnavailable(res);
    }
  });

  // no scope, like /health: the document describes routes, it grants nothing
  const openApi = JSON.stringify(buildOpenApi());
  app.get("/openapi.json", (_req, res) => {
    res.locals.route = "/openapi.json";
    res.type("json").send(openApi);
  });
  app.get("/metrics", createMetricsRoute({ ...deps, metrics }));
  app.use(createUiRouter(deps));
  app.use(createGithubSetupRouter(deps));

  app.use(
    createApiRouter({
      pool: deps.pool,
      boss: deps.boss,
      config: deps.config,
      logger: deps.logger,
      resolveSecret: deps.resolveSecret,
      knowledge: deps.knowledge,
    }),
  );

  app.use((req: Request, res: Response) => {
    sendError(res, 404, "not_found", `no route ${req.method} ${req.path}`);
  });
  app.use((error: unknown, req: Request, res: Response, _next: NextFunction) => {
    // body-parser and friends mark client errors with a 4xx status; everything else is ours
    const status = (error as { status?: unknown }).status;
    if (typeof status === "number" && status >= 400 && status < 500) {
      sendError(res, status, "bad_request", (error as Error).message);
      return;
    }
    deps.logger.error("request failed", {
      event: "http.error",
      method: req.method,
      route: res.locals.route ?? req.path,
      error: error instanceof Error ? error.message : String(error),
    });
    sendError(res, 500, "internal", "the request failed inside svc; the error is in the ingress log");
  });
  return app;
}

/**
 * One line per request: route, status, latency, client address (behind `server.trusted_proxies`,
 * the address they forwarded for), trigger id. Never headers, query strings or bodies.
 */
function requestLog(logger: Logger) {
  return (req: Request, res: Response, next: NextFunction) => {
    // asked per request, before anything is built: at SVC_LOG_LEVEL=warn the line costs nothing
    if (!logger.isLevelEnabled("info")) {
      next();
      return;
    }
    const started = process.hrtime.bigint();
    res.on("finish", () => {
      logger.info("request", {
        event: "http.request",
        method: req.method,
        route: res.locals.route ?? req.path,
        status: res.statusCode,
        latency_ms: Number(process.hrtime.bigint() - started) / 1e6,
        client: req.ip,
        ...(res.locals.trigger ? { trigger: res.locals.trigger } : {}),
      });
    });
    next();
  };
}
