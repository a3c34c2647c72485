import type { HostTool } from "../../../shared/config/host-tool-types.ts";
import { type HostToolInput, HostToolRefused } from "../../api/host-tool-call.ts";
import { runHostTool } from "../../api/host-tool-exec.ts";
import { hostToolInputSchema } from "../../api/host-tool-input.ts";
import { type ToolDefinition, textResult } from "../tool.ts";

/**
 * `host_<name>` for each `host_tools` entry: runs in the ingress (host-tool-exec.ts), in an empty
 * directory of its own, with the caller's run worktree as WORKTREE. The result carries the exit
 * code, stdout and stderr; a non-zero exit and a refused input are tool errors the agent can read.
 */
export function hostToolDefinition(tool: HostTool): ToolDefinition {
  return {
    name: `host_${tool.name}`,
    description: tool.description,
    access: { host: tool.name },
    input: hostToolInputSchema(tool),
    async run(input, { principal, deps }) {
      let result: Awaited<ReturnType<typeof runHostTool>>;
      try {
        result = await runHostTool(tool, input as HostToolInput, principal.run?.worktree);
      } catch (error) {
        if (!(error instanceof HostToolRefused)) throw error;
        deps.logger.warn("host tool refused", {
          event: "mcp.host_tool_refused",
          tool: tool.name,
          reason: error.message,
          invocation: principal.run?.invocation,
          by: principal.owner,
        });
        return textResult(error.message, true);
      }
      deps.logger.info("host tool ran", {
        event: "mcp.host_tool",
        tool: tool.name,
        exit_code: result.exitCode,
        stopped: result.stopped,
        invocation: principal.run?.invocation,
        by: principal.owner,
      });
      return textResult({ tool: tool.name, ...result }, result.exitCode !== 0);
    },
  };
}
