import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { RunAccess } from "../run/run-token.ts";

/** Above the SDK's 60 s default: `wait_tasks` may wait up to 600 s for an orchestrator's tasks. */
const CALL_TIMEOUT_MS = 660_000;

/** A tool as the OpenAI chat-completions API takes it. */
export interface OpenAiTool {
  type: "function";
  function: { name: string; description?: string; parameters: Record<string, unknown> };
}

export interface ToolSession {
  tools: OpenAiTool[];
  /** the tool's text result; a refusal or tool error comes back as text the model can read */
  /** `signal` abandons a long call (wait_tasks) when the run is stopped */
  call(name: string, args: unknown, signal?: AbortSignal): Promise<{ text: string; isError: boolean }>;
  close(): Promise<void>;
}

/**
 * The `openai` runtime reaches tools the way any agent does: as an MCP client of the daemon's
 * `/mcp`, with the run token. So the daemon alone decides what the run may call (the same scope
 * checks, `Forbidden` included), and the worker holds no tool code of its own.
 */
export async function openToolSession(access: RunAccess): Promise<ToolSession> {
  const client = new Client({ name: "svc-worker", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(access.mcpUrl), {
    requestInit: { headers: { authorization: `Bearer ${access.token}` } },
  });
  await client.connect(transport);
  const { tools } = await client.listTools();
  return {
    tools: tools.map((tool) => ({
      type: "function",
      function: {
        name: tool.name,
        ...(tool.description ? { description: tool.description } : {}),
        parameters: tool.inputSchema as Record<string, unknown>,
      },
    })),
    async call(name, args, signal) {
      try {
        const result = await client.callTool(
          { name, arguments: (args ?? {}) as Record<string, unknown> },
          undefined,
          { timeout: CALL_TIMEOUT_MS, ...(signal ? { signal } : {}) },
        );
        const text = ((result.content ?? []) as { type: string; text?: string }[])
          .map((part) => (part.type === "text" ? (part.text ?? "") : `[${part.type}]`))
          .join("\n");
        return { text, isError: result.isError === true };
      } catch (error) {
        return { text: `error: ${(error as Error).message}`, isError: true };
      }
    },
    async close() {
      // the session is stateless on the daemon's side: nothing is left to tidy if this fails
      await client.close().catch(() => {});
    },
  };
}
