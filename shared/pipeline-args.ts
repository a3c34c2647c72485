import type { PipelineArg } from "./config/types.ts";

export type ArgValue = string | number | boolean;

/**
 * Checks `args` against a pipeline's declared `args`: undeclared names, wrong JSON types and missing
 * required args. The API refuses a fire with these problems; the loader refuses a schedule's `args`.
 */
export function argProblems(
  pipeline: string,
  declared: Readonly<Record<string, PipelineArg>>,
  args: Readonly<Record<string, unknown>>,
): { accepted: Record<string, ArgValue>; problems: { name: string; message: string }[] } {
  const names = Object.keys(declared);
  const accepted: Record<string, ArgValue> = {};
  const problems: { name: string; message: string }[] = [];
  for (const [name, value] of Object.entries(args)) {
    const spec = declared[name];
    if (!spec) {
      problems.push({
        name,
        message: `"${name}" is not declared by pipelines/${pipeline}.yaml (declared: ${names.length ? names.join(", ") : "none"})`,
      });
      continue;
    }
    if (typeof value !== spec.type || (spec.type === "number" && !Number.isFinite(value))) {
      problems.push({ name, message: `"${name}" must be a ${spec.type}` });
      continue;
    }
    accepted[name] = value as ArgValue;
  }
  for (const [name, spec] of Object.entries(declared)) {
    if (spec.required && !(name in args)) problems.push({ name, message: `"${name}" is required` });
  }
  return { accepted, problems };
}
