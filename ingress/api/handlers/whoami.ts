import { crossesOwnerBoundary } from "../../auth/principal.ts";
import { ok } from "../context.ts";
import type { Reply, RouteContext } from "../types.ts";

/** The caller's own identity: what `svc auth setup` checks a token against. */
export async function whoamiRoute(ctx: RouteContext): Promise<Reply> {
  const { principal } = ctx;
  return ok({
    owner: principal.owner,
    via: principal.via,
    scopes: principal.scopes,
    sandboxed: principal.sandboxed,
    crossesOwnerBoundary: crossesOwnerBoundary(principal),
  });
}
