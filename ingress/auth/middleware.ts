import type { Request } from "express";
import type pg from "pg";
import { isLoopbackHost } from "../../shared/config/network.ts";
import type { SecretSource } from "../../shared/config/secret-source.ts";
import type { ConfigSnapshot } from "../../shared/config/types.ts";
import type { Logger } from "../../shared/logger.ts";
import { loopbackVerdict } from "../../shared/loopback-client.ts";
import { ApiError } from "../api/errors.ts";
import {
  BrokerScopeClaimError,
  BrokerTokenError,
  type BrokerVerifier,
  createBrokerVerifier,
  looksLikeJwt,
} from "./broker.ts";
import { LOCAL_PRINCIPAL, type Principal, refusal } from "./principal.ts";
import { createTokenResolver } from "./tokens.ts";

export interface AccessControl {
  /** true when no token is configured and only this machine can reach the ingress */
  readonly localInstall: boolean;
  /** the request's principal; throws a 401 ApiError when it has none */
  authenticate(req: Request): Promise<Principal>;
  /** throws a 403 ApiError when `principal` may not use a route requiring `scope` */
  authorize(principal: Principal, scope: string): void;
}

/**
 * A local install is one nobody else can reach: no `auth.tokens` and no broker configured, a
 * loopback bind, and no `server.loopback_star: false` (which says a same-host proxy forwards to
 * it). It changes nothing about access (a loopback client has `*` everywhere, see loopback.ts);
 * `svc doctor` reports it.
 */
export function isLocalInstall(config: Readonly<ConfigSnapshot>): boolean {
  const auth = config.auth;
  const noTokens = !auth || (Object.keys(auth.tokens).length === 0 && !auth.broker);
  return noTokens && isLoopbackHost(config.server.host) && config.server.loopbackStar !== false;
}

const UNAUTHENTICATED =
  "a valid token is required: send `Authorization: Bearer <token>` (see `svc auth setup`)";

/** The loopback client, or the 401 of a request without a token: one from a browser is told why. */
function anonymous(req: Request, loopbackStar: boolean): Principal {
  if (!loopbackStar) throw new ApiError(401, "unauthenticated", UNAUTHENTICATED);
  const verdict = loopbackVerdict(req);
  // the contract's "the loopback client keeps `*`", with or without configured tokens, for local
  // programs only: a browser's request on behalf of a web page is no local client
  if (verdict.local) return LOCAL_PRINCIPAL;
  throw new ApiError(
    401,
    "unauthenticated",
    verdict.refused
      ? `${UNAUTHENTICATED}; requests from this machine need none, but not this one: ${verdict.refused}`
      : UNAUTHENTICATED,
  );
}

export function createAccessControl(deps: {
  pool: pg.Pool;
  config: Readonly<ConfigSnapshot>;
  resolveSecret: (source: SecretSource) => string;
  logger: Logger;
}): AccessControl {
  const tokens = createTokenResolver(deps);
  let broker: BrokerVerifier | null = null;
  if (deps.config.auth?.broker) {
    try {
      broker = createBrokerVerifier(deps.config.auth.broker, deps.resolveSecret);
    } catch (error) {
      // a broken broker block refuses broker tokens; other tokens keep working
      deps.logger.error("auth broker unusable", {
        event: "auth.broker_unusable",
        reason: (error as Error).message,
      });
    }
  }
  const localInstall = isLocalInstall(deps.config);
  // `server.loopback_star: false`: nobody gets `*` without a token (a same-host TCP proxy in front)
  const loopbackStar = deps.config.server.loopbackStar !== false;

  return {
    localInstall,
    async authenticate(req) {
      const header = req.get("authorization");
      if (header === undefined) return anonymous(req, loopbackStar);
      const match = /^Bearer[ ]+([^\s]+)\s*$/i.exec(header);
      if (!match)
        throw new ApiError(401, "unauthenticated", "the Authorization header must be `Bearer <token>`");
      const token = match[1]!;
      const principal = await tokens.resolve(token);
      if (principal) return principal;
      if (broker && looksLikeJwt(token)) {
        try {
          return await broker.verify(token);
        } catch (error) {
          if (error instanceof BrokerScopeClaimError)
            throw new ApiError(401, "invalid_scope_claim", error.message);
          if (error instanceof BrokerTokenError) throw new ApiError(401, "unauthenticated", error.message);
          throw error;
        }
      }
      throw new ApiError(401, "unauthenticated", "the token matches no configured, issued or broker token");
    },
    authorize(principal, scope) {
      const refused = refusal(principal, scope);
      if (!refused) return;
      if (refused.reason === "out_of_vocabulary") {
        throw new ApiError(
          403,
          "forbidden",
          `the token lists scopes outside the vocabulary (${refused.scopes.join(", ")}) and is refused on every route; fix its scopes`,
        );
      }
      if (refused.reason === "sandboxed") {
        throw new ApiError(403, "forbidden", "a sandboxed agent's token is refused for host tools");
      }
      throw new ApiError(403, "forbidden", `this route requires the scope ${scope}`);
    },
  };
}
