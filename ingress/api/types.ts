import type { Request, Response } from "express";
import type pg from "pg";
import type { PgBoss } from "pg-boss";
import type { SecretSource } from "../../shared/config/secret-source.ts";
import type { ConfigSnapshot } from "../../shared/config/types.ts";
import type { Knowledge } from "../../shared/knowledge/service.ts";
import type { Logger } from "../../shared/logger.ts";
import type { Scope } from "../../shared/scopes.ts";
import type { AccessControl } from "../auth/middleware.ts";
import type { AUTHENTICATED, Principal } from "../auth/principal.ts";
import type { JsonSchema, SchemaName } from "./schemas.ts";

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

/** One route of the table in routes.ts. */
export interface RouteSpec {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  /** Express path; `:name` segments are parameters */
  path: string;
  /** a vocabulary scope; `host:execute:<name>` takes the `:name` parameter; `authenticated` = any valid token */
  scope: Scope | "host:execute:<name>" | typeof AUTHENTICATED;
  /** a second vocabulary scope the caller must hold as well (`POST /evals/run` fires pipelines) */
  alsoScope?: Scope;
  /** workloads reached through it are limited to the caller's own unless it crosses the owner boundary */
  ownerBound?: boolean;
  summary: string;
  handler: (ctx: RouteContext) => Promise<Reply>;
  /** the answer to a caller refused by scope, when the route speaks its own protocol */
  refused?: () => Reply;
  /** OpenAPI (ingress/api/openapi.ts): query parameters, name → meaning */
  query?: Record<string, string>;
  /** OpenAPI: the success answer; absent = 200 with a default description */
  response?: { status?: number; description: string; schema?: SchemaName };
  /** OpenAPI: the JSON body of a POST, as a JSON Schema; absent = any object */
  body?: JsonSchema;
}
