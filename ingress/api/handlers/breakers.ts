import { closeBreaker } from "../../../db/circuit-breakers.ts";
import { ok } from "../context.ts";
import { badRequest } from "../errors.ts";
import type { Reply, RouteContext } from "../types.ts";

/** `POST /admin/resume { pipeline }`: closes the pipeline's open circuit breaker early. */
export async function resumePipeline(ctx: RouteContext, pipeline: unknown): Promise<Reply> {
  if (typeof pipeline !== "string" || pipeline === "") {
    throw badRequest('"pipeline" must be the name of a configured pipeline');
  }
  if (!ctx.deps.config.pipelines[pipeline]) {
    throw badRequest(
      `pipeline "${pipeline}" is not configured - name one of: ${Object.keys(ctx.deps.config.pipelines).join(", ") || "none"}`,
    );
  }
  const wasOpen = await closeBreaker(ctx.deps.pool, pipeline);
  ctx.deps.logger.info("circuit breaker closed", {
    event: "api.breaker_resume",
    pipeline,
    by: ctx.principal.owner,
    was_open: wasOpen,
  });
  return ok({ pipeline, breaker: "closed", wasOpen });
}
