import type { Pipeline } from "../../shared/config/types.ts";
import { badRequest } from "./errors.ts";

/**
 * A fire's `args` gated by the pipeline's declared `args`: undeclared names, wrong JSON types and
 * missing required args are refused before anything is stored.
 */
export function gateArgs(pipeline: Pipeline, args: unknown): Record<string, string | number | boolean> {
  if (args === undefined || args === null) args = {};
  if (typeof args !== "object" || Array.isArray(args))
    throw badRequest('"args" must be an object of name to value');
  const declared = pipeline.args;
  const names = Object.keys(declared);
  const out: Record<string, string | number | boolean> = {};
  const problems: string[] = [];
  for (const [name, value] of Object.entries(args as Record<string, unknown>)) {
    const spec = declared[name];
    if (!spec) {
      problems.push(
        `"${name}" is not declared by pipelines/${pipeline.name}.yaml (declared: ${names.length ? names.join(", ") : "none"})`,
      );
      continue;
    }
    if (typeof value !== spec.type || (spec.type === "number" && !Number.isFinite(value))) {
      problems.push(`"${name}" must be a ${spec.type}`);
      continue;
    }
    out[name] = value as string | number | boolean;
  }
  for (const [name, spec] of Object.entries(declared)) {
    if (spec.required && !(name in (args as Record<string, unknown>))) problems.push(`"${name}" is required`);
  }
  if (problems.length) throw badRequest(`invalid args: ${problems.join("; ")}`, { problems });
  return out;
}
