import { runHostToolRoute } from "../handlers/host-tools.ts";
import { mcpForbidden, mcpRoute } from "../handlers/mcp.ts";
import type { RouteSpec } from "../types.ts";

export const TOOL_ROUTES: readonly RouteSpec[] = [
  {
    method: "POST",
    path: "/host-tools/:name",
    scope: "host:execute:<name>",
    summary: "run host tool <name>; refused to sandboxed-agent tokens",
    handler: runHostToolRoute,
  },
  {
    method: "POST",
    path: "/mcp",
    scope: "mcp:read",
    summary:
      "tool protocol (MCP, Streamable HTTP, stateless): read tools need mcp:read, write tools mcp:write, host_<name> host:execute:<name>; GET/DELETE 405",
    handler: mcpRoute,
    refused: () => mcpForbidden(),
  },
];
