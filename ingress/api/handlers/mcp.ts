import packageJson from "../../../package.json" with { type: "json" };
import { refusal } from "../../auth/principal.ts";
import { ok, type Reply, type RouteContext } from "../context.ts";
import { ApiError } from "../errors.ts";
import { checkToolInput, runHostTool } from "../host-tool-exec.ts";

/**
 * The tool protocol (MCP over JSON-RPC, one request per POST): `initialize` and `tools/list` need
 * `mcp:read`, `tools/call` needs `mcp:write`, and calling `host_<name>` additionally needs
 * `host:execute:<name>` (never granted by `mcp:write`, never to a sandboxed agent's token).
 * Every refusal is the JSON-RPC error `Forbidden`.
 */
const PROTOCOL_VERSION = "2025-06-18";
const FORBIDDEN = -32001;

interface RpcRequest {
  jsonrpc: "2.0";
  id?: string | number | null;
  method: string;
  params?: Record<string, unknown>;
}

export function mcpForbidden(id: RpcRequest["id"] = null): Reply {
  return { status: 403, body: { jsonrpc: "2.0", id, error: { code: FORBIDDEN, message: "Forbidden" } } };
}

function rpcError(id: RpcRequest["id"], code: number, message: string, status = 200): Reply {
  return { status, body: { jsonrpc: "2.0", id: id ?? null, error: { code, message } } };
}

function result(id: RpcRequest["id"], value: unknown): Reply {
  return ok({ jsonrpc: "2.0", id: id ?? null, result: value });
}

export async function mcpRoute(ctx: RouteContext): Promise<Reply> {
  const request = ctx.req.body as RpcRequest | undefined;
  if (
    !request ||
    typeof request !== "object" ||
    request.jsonrpc !== "2.0" ||
    typeof request.method !== "string"
  ) {
    return rpcError(null, -32600, "Invalid Request: send one JSON-RPC 2.0 request object", 400);
  }
  const { id, method } = request;
  const needs = method === "tools/call" ? "mcp:write" : "mcp:read";
  if (refusal(ctx.principal, needs)) return mcpForbidden(id);

  switch (method) {
    case "initialize":
      return result(id, {
        protocolVersion: PROTOCOL_VERSION,
        capabilities: { tools: { listChanged: false } },
        serverInfo: { name: "svc", version: packageJson.version },
      });
    case "notifications/initialized":
      return { status: 202, body: "" };
    case "ping":
      return result(id, {});
    case "tools/list":
      return result(id, {
        tools: Object.values(ctx.deps.config.hostTools).map((tool) => ({
          name: `host_${tool.name}`,
          description: tool.description,
          inputSchema: {
            type: "object",
            properties: Object.fromEntries(
              Object.entries(tool.input).map(([name, spec]) => [name, { type: spec.type }]),
            ),
            required: Object.entries(tool.input)
              .filter(([, spec]) => spec.required)
              .map(([name]) => name),
            additionalProperties: false,
          },
        })),
      });
    case "tools/call": {
      const name = request.params?.name;
      const toolName = typeof name === "string" && name.startsWith("host_") ? name.slice(5) : undefined;
      if (toolName === undefined) return rpcError(id, -32602, "unknown tool");
      // the scope comes before the lookup, so a caller cannot learn which tools exist
      if (refusal(ctx.principal, `host:execute:${toolName}`)) return mcpForbidden(id);
      const tool = ctx.deps.config.hostTools[toolName];
      if (!tool) return rpcError(id, -32602, "unknown tool");
      let input: Record<string, string | number | boolean>;
      try {
        input = checkToolInput(tool, request.params?.arguments);
      } catch (error) {
        if (error instanceof ApiError) return rpcError(id, -32602, error.message);
        throw error;
      }
      const run = await runHostTool(tool, input);
      ctx.deps.logger.info("host tool ran", {
        event: "mcp.host_tool",
        tool: tool.name,
        exit_code: run.exitCode,
        by: ctx.principal.owner,
      });
      return result(id, {
        content: [{ type: "text", text: run.stdout + (run.stderr ? `\n${run.stderr}` : "") }],
        isError: run.exitCode !== 0,
      });
    }
    default:
      return rpcError(id, -32601, `Method not found: ${method}`);
  }
}
