import { handlerSchema } from "../../../shared/output-schemas.ts";

/**
 * `result.schema` as one self-contained document for an agent CLI's structured-output mode: each
 * `$ref` to an output handler's schema id (`svc://schemas/...`) is replaced by that schema, since
 * the CLI (and the model API behind it) cannot resolve svc's ids. The result is still checked
 * against the original schema afterwards, exactly as for every runtime.
 */
export function standaloneSchema(schema: Record<string, unknown>): Record<string, unknown> {
  return inline(schema) as Record<string, unknown>;
}

function inline(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(inline);
  if (value === null || typeof value !== "object") return value;
  const ref = (value as { $ref?: unknown }).$ref;
  const handler = typeof ref === "string" ? handlerSchema(ref) : undefined;
  if (handler) {
    const { $id: _id, ...rest } = handler;
    return inline(rest);
  }
  return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, inline(inner)]));
}
