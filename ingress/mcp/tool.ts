import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { z } from "zod";
import type { ConfigSnapshot } from "../../shared/config/types.ts";
import type { ApiDependencies } from "../api/types.ts";
import type { Principal } from "../auth/principal.ts";

/**
 * One tool of the tool protocol. `access` decides the scope a caller needs: a read tool needs
 * `mcp:read` (and is announced with `readOnlyHint: true`), a write tool `mcp:write`, and host tool
 * `<name>` needs `host:execute:<name>` (never granted by `mcp:write`, never to a sandboxed run).
 */
export interface ToolDefinition {
  name: string;
  description: string;
  access: "read" | "write" | { host: string };
  /**
   * Beyond the scope: whether this caller may use the tool at all (the task tools: an orchestrator's
   * run token only). A caller it refuses does not see the tool and gets `Forbidden` calling it.
   */
  permits?(principal: Principal): boolean;
  /** validated by the SDK before `run` is called: a refused input runs nothing */
  input: z.ZodObject;
  run(input: Record<string, unknown>, call: ToolCall): Promise<CallToolResult>;
}

/** Who calls, and with what: the checked principal and the daemon's dependencies. */
export interface ToolCall {
  principal: Principal;
  deps: ApiDependencies;
}

/** The tools of a configuration: built from the registry (tools/index.ts). */
export type ToolSource = (config: Readonly<ConfigSnapshot>) => ToolDefinition[];

export function toolScope(tool: Pick<ToolDefinition, "access">): string {
  if (tool.access === "read") return "mcp:read";
  if (tool.access === "write") return "mcp:write";
  return `host:execute:${tool.access.host}`;
}

export function textResult(value: unknown, isError = false): CallToolResult {
  const text = typeof value === "string" ? value : JSON.stringify(value, null, 2);
  return {
    content: [{ type: "text", text }],
    ...(typeof value === "object" && value !== null && !Array.isArray(value)
      ? { structuredContent: value as Record<string, unknown> }
      : {}),
    ...(isError ? { isError: true } : {}),
  };
}
