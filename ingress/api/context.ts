import type { Viewer } from "../../db/owned-workloads.ts";
import type { Principal } from "../auth/principal.ts";
import { crossesOwnerBoundary } from "../auth/principal.ts";
import type { Reply } from "./types.ts";

/** Returned by a handler that has written the response itself. */
export const ANSWERED: Reply = Object.freeze({ status: 0, body: undefined });

export function ok(body: unknown, status = 200): Reply {
  return { status, body };
}

export function viewerOf(principal: Principal): Viewer {
  return { owner: principal.owner, crossOwner: crossesOwnerBoundary(principal) };
}
