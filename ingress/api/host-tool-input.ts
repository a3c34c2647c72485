import { z } from "zod";
import type { HostTool } from "../../shared/config/host-tool-types.ts";
import { badRequest } from "./errors.ts";
import type { HostToolInput } from "./host-tool-call.ts";

/*
 * zod is imported only here, and this module only on first use (the tool protocol, POST
 * /host-tools/:name), so an ingress start does not pay for it.
 */

function fieldSchema(spec: HostTool["input"][string]): z.ZodType {
  const base =
    spec.type === "number"
      ? z.number()
      : spec.type === "integer"
        ? z.number().int()
        : spec.type === "boolean"
          ? z.boolean()
          : z.string();
  const described = spec.description ? base.describe(spec.description) : base;
  return spec.required ? described : described.optional();
}

/**
 * The tool's `input` map as a zod object: declared types, required fields, and nothing else (an
 * undeclared field is refused). The tool protocol and `POST /host-tools/:name` both check with it.
 */
export function hostToolInputSchema(tool: HostTool): z.ZodObject {
  return z
    .object(Object.fromEntries(Object.entries(tool.input).map(([name, spec]) => [name, fieldSchema(spec)])))
    .strict();
}

/** Checks `input` against the tool's declared fields: undeclared, missing and mistyped fields are refused. */
export function checkToolInput(tool: HostTool, input: unknown): HostToolInput {
  const parsed = hostToolInputSchema(tool).safeParse(input ?? {});
  if (parsed.success) return parsed.data as HostToolInput;
  const problems = parsed.error.issues.map((issue) => {
    const where = issue.path.length ? `"${issue.path.join(".")}"` : "input";
    if (issue.code === "unrecognized_keys")
      return `${issue.keys.map((key) => `"${key}"`).join(", ")} is not an input of host tool ${tool.name}`;
    return `${where}: ${issue.message}`;
  });
  throw badRequest(`invalid input: ${problems.join("; ")}`, { problems });
}
