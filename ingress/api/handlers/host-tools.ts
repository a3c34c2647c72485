import { ok } from "../context.ts";
import { badRequest, notFound } from "../errors.ts";
import { HostToolRefused } from "../host-tool-call.ts";
import { runHostTool } from "../host-tool-exec.ts";
import { allowOnlyKeys, bodyObject, pathParam } from "../input.ts";
import type { Reply, RouteContext } from "../types.ts";

/**
 * `POST /host-tools/:name` runs host tool `<name>` for a caller holding `host:execute:<name>` (or
 * `*`). The scope is checked before the name is looked up, so callers cannot probe tool names, and
 * a sandboxed agent's token never gets here.
 */
export async function runHostToolRoute(ctx: RouteContext): Promise<Reply> {
  const tool = ctx.deps.config.hostTools[pathParam(ctx.req, "name")];
  if (!tool) throw notFound("host tool");
  const body = bodyObject(ctx.req);
  allowOnlyKeys(body, ["input"]);
  const { checkToolInput } = await import("../host-tool-input.ts");
  const input = checkToolInput(tool, body.input);
  const result = await runHostTool(tool, input, ctx.principal.run?.worktree).catch((error: unknown) => {
    if (!(error instanceof HostToolRefused)) throw error;
    ctx.deps.logger.warn("host tool refused", {
      event: "api.host_tool_refused",
      tool: tool.name,
      reason: error.message,
      by: ctx.principal.owner,
    });
    throw badRequest(error.message);
  });
  ctx.deps.logger.info("host tool ran", {
    event: "api.host_tool",
    tool: tool.name,
    exit_code: result.exitCode,
    by: ctx.principal.owner,
  });
  return ok({ tool: tool.name, ...result });
}
