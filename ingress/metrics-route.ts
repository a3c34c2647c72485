import { createHash, timingSafeEqual } from "node:crypto";
import type { NextFunction, Request, Response } from "express";
import type pg from "pg";
import type { SecretSource } from "../shared/config/secret-source.ts";
import type { ConfigSnapshot } from "../shared/config/types.ts";
import type { Logger } from "../shared/logger.ts";
import { ApiError } from "./api/errors.ts";
import { createAccessControl } from "./auth/middleware.ts";
import { sendError } from "./errors.ts";
import type { IngressMetrics } from "./metrics.ts";

/**
 * `GET /metrics`: the Prometheus exposition of this ingress. Access, in order: the scraper token
 * `metrics.token` from daemon.yaml (grants this route only); any token carrying `admin`; no token
 * on a local install (loopback bind, no `auth.tokens`, loopback peer), like every other route.
 */
export function createMetricsRoute(deps: {
  metrics: IngressMetrics;
  pool: pg.Pool;
  config: Readonly<ConfigSnapshot>;
  logger: Logger;
  resolveSecret: (source: SecretSource) => string;
}) {
  const access = createAccessControl(deps);
  const scraperDigest = deps.config.metrics ? digest(deps.resolveSecret(deps.config.metrics.token)) : null;

  return async (req: Request, res: Response, next: NextFunction) => {
    res.locals.route = "/metrics";
    try {
      if (!isScraper(req, scraperDigest)) access.authorize(await access.authenticate(req), "admin");
      const text = await deps.metrics.registry.metrics();
      res.status(200).type(deps.metrics.registry.contentType).send(text);
    } catch (error) {
      if (!(error instanceof ApiError)) return next(error);
      const headers: Record<string, string> =
        error.status === 401 ? { "WWW-Authenticate": 'Bearer realm="svc"' } : {};
      sendError(res, error.status, error.code, error.message, headers);
    }
  };
}

function digest(value: string): Buffer {
  return createHash("sha256").update(value).digest();
}

/** Compared as digests, so the comparison takes the same time whatever the length of the guess. */
function isScraper(req: Request, expected: Buffer | null): boolean {
  if (!expected) return false;
  const match = /^Bearer[ ]+([^\s]+)\s*$/i.exec(req.get("authorization") ?? "");
  return match !== null && timingSafeEqual(digest(match[1]!), expected);
}
