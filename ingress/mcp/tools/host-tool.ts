import type { HostTool } from "../../../shared/config/types.ts";
import { type HostToolInput, runHostTool } from "../../api/host-tool-exec.ts";
import { hostToolInputSchema } from "../../api/host-tool-input.ts";
import { type ToolDefinition, textResult } from "../tool.ts";

/**
 * `host_<name>` for each `host_tools` entry: runs on the daemon's host, in the caller's run worktree
 * when the caller is a run (the daemon's working directory otherwise). The result carries the exit
 * code, stdout and stderr; a non-zero exit is a tool error the agent can read.
 */
export function hostToolDefinition(tool: HostTool): ToolDefinition {
  return {
    name: `host_${tool.name}`,
    description: tool.description,
    access: { host: tool.name },
    input: hostToolInputSchema(tool),
    async run(input, { principal, deps }) {
      const result = await runHostTool(tool, input as HostToolInput, principal.run?.worktree);
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
