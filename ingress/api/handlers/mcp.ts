import type { Request, Response } from "express";
import { FORBIDDEN, FORBIDDEN_CODE } from "../../mcp/forbidden.ts";
import { ANSWERED } from "../context.ts";
import type { Reply, RouteContext } from "../types.ts";

/**
 * `POST /mcp`: the tool protocol (MCP, Streamable HTTP, stateless, JSON answers) on the official
 * SDK. The router has authenticated the caller and checked `mcp:read`; the tools and their own
 * scope checks are in ingress/mcp/.
 */
export async function mcpRoute(ctx: RouteContext): Promise<Reply> {
  // loaded on first use: the SDK is a large import an ingress that never serves /mcp need not pay for at start
  const { serveToolProtocol } = await import("../../mcp/server.ts");
  await serveToolProtocol(ctx.req, ctx.res, ctx.principal, ctx.deps);
  return ANSWERED;
}

/** The answer to a caller without `mcp:read`: the JSON-RPC error `Forbidden`. */
export function mcpForbidden(): Reply {
  return {
    status: 403,
    body: { jsonrpc: "2.0", id: null, error: { code: FORBIDDEN_CODE, message: FORBIDDEN } },
  };
}

/**
 * `GET` and `DELETE /mcp` answer 405: a stateless server keeps no session to stream
 * notifications on or to end.
 */
export function mcpMethodNotAllowed(_req: Request, res: Response): void {
  res
    .status(405)
    .set("Allow", "POST")
    .json({ jsonrpc: "2.0", id: null, error: { code: -32000, message: "Method not allowed." } });
}
