import { z } from "zod";
import { keepResult, runsShadow } from "../../../db/kept-results.ts";
import { runPipeline } from "../../../shared/config/pipeline/shadow.ts";
import { checkResult } from "../../../shared/result-check.ts";
import type { Principal } from "../../auth/principal.ts";
import { type ToolDefinition, textResult } from "../tool.ts";

/**
 * `keep_result_so_far` (docs/worker.md, "Partial results"): a review's agent keeps its result so
 * far on its own agent task, each call replacing the last, so that a run stopped at its turn or
 * time limit publishes it, marked incomplete. A tool works on every runtime, where the file
 * `$RUN_DIR/result.partial.json` needs an agent that may write there. Only a run token the worker
 * marked (a pipeline that takes a partial result: worker/run/partial.ts) sees it.
 */
const keepsResult = (principal: Principal) =>
  principal.run?.keepsResult === true && typeof principal.run.task === "string";

export const keepResultSoFar: ToolDefinition = {
  name: "keep_result_so_far",
  description:
    "Keep your result so far: the whole JSON object your final answer would be, matching the same schema, replacing what you kept before. If your run is stopped at its turn or time limit, the last result kept is published, marked incomplete; if you finish, only your final answer counts. Call it again whenever you find something.",
  access: "write",
  permits: keepsResult,
  input: z
    .object({
      result: z
        .record(z.string(), z.unknown())
        .describe("your whole result so far, one JSON object matching the result schema"),
    })
    .strict(),
  async run(input, { principal, deps }) {
    const run = principal.run!;
    // a shadow run keeps a result of its candidate's shape, which may differ from the live one's
    const pipeline = run.pipeline
      ? runPipeline(deps.config, run.pipeline, await runsShadow(deps.pool, run.invocation))
      : undefined;
    const schema = pipeline?.result?.schema;
    if (!schema)
      return textResult(
        `not kept: pipeline ${run.pipeline ?? "(none)"} has no result.schema on this daemon`,
        true,
      );
    const { result } = input as { result: Record<string, unknown> };
    const invalid = checkResult(schema, result);
    // the model reads why and calls again; what it kept before stays kept
    if (invalid)
      return textResult(
        `not kept: ${invalid.message}. Fix it and call keep_result_so_far again with the whole result; what you kept before is unchanged.`,
        true,
      );
    const kept = await keepResult(deps.pool, { invocationId: run.invocation, taskId: run.task! }, result);
    if (!kept) return textResult("not kept: this agent attempt has ended", true);
    return textResult("kept: if your run is stopped now, this result is published, marked incomplete");
  },
};
