import type { Request, Response } from "express";
import type pg from "pg";
import type { PgBoss } from "pg-boss";
import type { ConfigSnapshot, SecretSource } from "../../shared/config/types.ts";
import type { Knowledge } from "../../shared/knowledge/service.ts";
import type { Logger } from "../../shared/logger.ts";
import type { AccessControl } from "../auth/middleware.ts";
import type { Principal } from "../auth/principal.ts";

/**
 * What the daemon API needs from the ingress process. The ingress app builds one of these at
 * start-up and mounts `createApiRouter(deps)` after the webhook routes.
 */
export interface ApiDependencies {
  pool: pg.Pool;
  boss: PgBoss;
  config: Readonly<ConfigSnapshot>;
  logger: Logger;
  /** secrets resolved at start-up (stored `secret_ref`s decrypted), keyed by secret name */
  resolveSecret: (source: SecretSource) => string;
  /** the knowledge opened (version-checked, indexed) at start-up */
  knowledge?: Knowledge;
}

/** What a route handler gets: the request, its checked principal and the daemon's dependencies. */
export interface RouteContext {
  req: Request;
  /** for a handler that writes its own answer (the tool protocol); it then returns ANSWERED */
  res: Response;
  principal: Principal;
  deps: ApiDependencies;
  access: AccessControl;
}

export interface Reply {
  status: number;
  body: unknown;
}
