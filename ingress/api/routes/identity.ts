import { AUTHENTICATED } from "../../auth/principal.ts";
import { whoamiRoute } from "../handlers/whoami.ts";
import type { RouteSpec } from "../types.ts";

export const IDENTITY_ROUTES: readonly RouteSpec[] = [
  {
    method: "GET",
    path: "/whoami",
    scope: AUTHENTICATED,
    summary: "the caller's identity and scopes",
    handler: whoamiRoute,
    response: { description: "the caller's identity and scopes", schema: "Whoami" },
  },
];
