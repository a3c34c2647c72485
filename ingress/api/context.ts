import type { Request, Response } from "express";
import type { Viewer } from "../../db/owned-workloads.ts";
import type { AccessControl } from "../auth/middleware.ts";
import type { Principal } from "../auth/principal.ts";
import { crossesOwnerBoundary } from "../auth/principal.ts";
import type { ApiDependencies } from "./router.ts";

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

/** Returned by a handler that has written the response itself. */
export const ANSWERED: Reply = Object.freeze({ status: 0, body: undefined });

export function ok(body: unknown, status = 200): Reply {
  return { status, body };
}

export function viewerOf(principal: Principal): Viewer {
  return { owner: principal.owner, crossOwner: crossesOwnerBoundary(principal) };
}
