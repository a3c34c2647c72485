import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isJSONRPCRequest, type JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import type { Request, Response } from "express";
import packageJson from "../../package.json" with { type: "json" };
import type { ApiDependencies } from "../api/types.ts";
import { allows, type Principal } from "../auth/principal.ts";
import { FORBIDDEN, FORBIDDEN_CODE } from "./forbidden.ts";
import { type ToolDefinition, toolScope } from "./tool.ts";
import { toolsOf } from "./tools/index.ts";

/**
 * The scope a `tools/call` of `name` needs. `host_<x>` needs `host:execute:<x>` whether or not `x`
 * exists, so a caller cannot probe host tool names; an unknown built-in name needs nothing here
 * and the SDK answers that the tool does not exist.
 */
function callRequirement(
  tools: readonly ToolDefinition[],
  name: unknown,
): { scope: string; tool?: ToolDefinition } | undefined {
  if (typeof name !== "string") return undefined;
  const tool = tools.find((entry) => entry.name === name);
  if (tool) return { scope: toolScope(tool), tool };
  return name.startsWith("host_") ? { scope: `host:execute:${name.slice("host_".length)}` } : undefined;
}

/** The caller may call `tool`: its scope, and the tool's own rule when it has one. */
function callable(principal: Principal, tool: ToolDefinition): boolean {
  return allows(principal, toolScope(tool)) && (tool.permits?.(principal) ?? true);
}

/** An MCP server holding the tools `principal` may call: `tools/list` shows exactly those. */
export function createToolServer(
  principal: Principal,
  deps: ApiDependencies,
  tools: readonly ToolDefinition[],
): McpServer {
  const server = new McpServer(
    { name: "svc", version: packageJson.version },
    { capabilities: { tools: { listChanged: false } } },
  );
  for (const tool of tools) {
    if (!callable(principal, tool)) continue;
    server.registerTool(
      tool.name,
      {
        description: tool.description,
        inputSchema: tool.input,
        annotations: { readOnlyHint: tool.access === "read" },
      },
      (input: Record<string, unknown>) => tool.run(input, { principal, deps }),
    );
  }
  return server;
}

/**
 * Serves one POST of the tool protocol, stateless: a server and a transport for this request only,
 * answering JSON (no event stream). A `tools/call` beyond the caller's scopes is answered with the
 * JSON-RPC error `Forbidden` before the SDK sees it, so neither input validation nor the tool runs.
 */
export async function serveToolProtocol(
  req: Request,
  res: Response,
  principal: Principal,
  deps: ApiDependencies,
): Promise<void> {
  const tools = toolsOf(deps.config);
  const server = createToolServer(principal, deps, tools);
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  res.on("close", () => {
    // closing an already closed stateless pair is harmless; nothing is left to report
    transport.close().catch(() => {});
    server.close().catch(() => {});
  });
  await server.connect(transport);
  const deliver = transport.onmessage;
  transport.onmessage = (message: JSONRPCMessage, extra) => {
    if (isJSONRPCRequest(message) && message.method === "tools/call") {
      const name = message.params?.name;
      const required = callRequirement(tools, name);
      const refused =
        required &&
        (required.tool ? !callable(principal, required.tool) : !allows(principal, required.scope));
      if (refused) {
        deps.logger.info("tool call refused", {
          event: "mcp.forbidden",
          tool: typeof name === "string" ? name.slice(0, 100) : undefined,
          by: principal.owner,
        });
        transport
          .send({ jsonrpc: "2.0", id: message.id, error: { code: FORBIDDEN_CODE, message: FORBIDDEN } })
          .catch(() => {}); // the client went away; there is nobody to tell
        return;
      }
    }
    deliver?.(message, extra);
  };
  await transport.handleRequest(req, res, req.body);
}
