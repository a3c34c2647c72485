import express, { type NextFunction, type Request, type Response, Router } from "express";
import type { Logger } from "../../shared/logger.ts";
import { createAccessControl } from "../auth/middleware.ts";
import { isDatabaseUnavailable, sendError, sendUnavailable } from "../errors.ts";
import { describeContentType, isJsonContentType } from "../media-type.ts";
import { ANSWERED } from "./context.ts";
import { ApiError } from "./errors.ts";
import { mcpMethodNotAllowed } from "./handlers/mcp.ts";
import { API_ROUTES, REMOVED_ROUTES, requiredScopes } from "./routes.ts";
import type { ApiDependencies, Reply } from "./types.ts";

const JSON_LIMIT = "1mb";

/**
 * Mounts every route of the table in routes.ts with its scope check in front. Authentication runs
 * per route, never router-wide: a path the table lacks falls through to the app's 404, so removed
 * and unknown paths answer 404 whatever credentials come with them.
 */
export function createApiRouter(deps: ApiDependencies): Router {
  const router = Router();
  const access = createAccessControl(deps);
  const json = express.json({ limit: JSON_LIMIT, type: () => true });

  for (const route of API_ROUTES) {
    const method = route.method.toLowerCase() as "get" | "post" | "patch" | "delete";
    router[method](route.path, async (req: Request, res: Response, next: NextFunction) => {
      res.locals.route = route.path;
      try {
        const principal = await access.authenticate(req);
        try {
          for (const scope of requiredScopes(route, req.params as Record<string, string>))
            access.authorize(principal, scope);
        } catch (error) {
          if (route.refused && error instanceof ApiError && error.status === 403)
            return send(res, route.refused());
          throw error;
        }
        if (method !== "get") await parseBody(json, req, res);
        send(res, await route.handler({ req, res, principal, deps, access }));
      } catch (error) {
        handleError(error, req, res, next, deps.logger);
      }
    });
  }
  router.get("/mcp", mcpMethodNotAllowed);
  router.delete("/mcp", mcpMethodNotAllowed);
  for (const removed of REMOVED_ROUTES) {
    router.get(removed.path, (_req, res) => {
      res.locals.route = removed.path;
      sendError(
        res,
        404,
        "not_found",
        `${removed.method} ${removed.path} was removed; use ${removed.replacement}`,
      );
    });
  }
  return router;
}

/**
 * The body of a POST, PATCH or DELETE: JSON sent as `application/json`, or nothing at all (an empty
 * object). Any other Content-Type is refused before the handler runs, because a browser sends
 * `text/plain`, form and multipart bodies cross-site without asking first (no CORS preflight).
 */
function parseBody(json: express.RequestHandler, req: Request, res: Response): Promise<void> {
  const type = req.headers["content-type"];
  const empty =
    req.headers["content-length"] === "0" ||
    (!req.headers["content-length"] && !req.headers["transfer-encoding"]);
  if (type === undefined && empty) {
    req.body = {};
    return Promise.resolve();
  }
  if (!isJsonContentType(type)) {
    return Promise.reject(
      new ApiError(
        415,
        "unsupported_media_type",
        `this route reads a JSON body: send it with Content-Type: application/json (got ${describeContentType(type)})`,
      ),
    );
  }
  if (empty) {
    req.body = {};
    return Promise.resolve();
  }
  return new Promise((resolve, reject) => {
    json(req, res, (error?: unknown) => {
      if (!error) return resolve();
      const status = (error as { status?: number }).status;
      if (status === 413)
        reject(new ApiError(413, "body_too_large", `the request body exceeds ${JSON_LIMIT}`));
      else reject(new ApiError(400, "invalid_json", "the request body is not valid JSON"));
    });
  });
}

function send(res: Response, reply: Reply): void {
  if (reply === ANSWERED) return;
  if (reply.body === "") {
    res.status(reply.status).end();
    return;
  }
  res.status(reply.status).json(reply.body);
}

function handleError(error: unknown, req: Request, res: Response, next: NextFunction, logger: Logger): void {
  if (error instanceof ApiError) {
    if (res.headersSent) return;
    const headers: Record<string, string> =
      error.status === 401 ? { "WWW-Authenticate": 'Bearer realm="svc"' } : {};
    res
      .status(error.status)
      .set(headers)
      .json({ error: { code: error.code, message: error.message, ...(error.details ?? {}) } });
    return;
  }
  if (isDatabaseUnavailable(error)) {
    logger.warn("the database is unreachable", {
      event: "api.unavailable",
      method: req.method,
      route: res.locals.route,
    });
    sendUnavailable(res);
    return;
  }
  next(error);
}
