import type { Pipeline } from "../../shared/config/types.ts";
import { type ArgValue, argProblems } from "../../shared/pipeline-args.ts";
import { badRequest } from "./errors.ts";

/**
 * A fire's `args` gated by the pipeline's declared `args`: undeclared names, wrong JSON types and
 * missing required args are refused before anything is stored.
 */
export function gateArgs(pipeline: Pipeline, args: unknown): Record<string, ArgValue> {
  if (args === undefined || args === null) args = {};
  if (typeof args !== "object" || Array.isArray(args))
    throw badRequest('"args" must be an object of name to value');
  const { accepted, problems } = argProblems(pipeline.name, pipeline.args, args as Record<string, unknown>);
  if (problems.length)
    throw badRequest(`invalid args: ${problems.map((p) => p.message).join("; ")}`, {
      problems: problems.map((p) => p.message),
    });
  return accepted;
}
