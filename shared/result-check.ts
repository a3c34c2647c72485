import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";
import { type Diagnostic, diagnostic } from "./diagnostics.ts";
import { HANDLER_SCHEMAS } from "./output-schemas.ts";

/**
 * A result against a pipeline's `result.schema`: the worker checks the agent's final result with it
 * (worker/run/result-check.ts), the tool protocol a result kept so far (`keep_result_so_far`).
 */
const ajv = new Ajv({ allErrors: false, strict: false });
for (const schema of HANDLER_SCHEMAS) ajv.addSchema(schema);
const compiled = new WeakMap<object, ValidateFunction>();

function pathOf(error: ErrorObject): string {
  const base = error.instancePath || "";
  if (error.keyword === "required")
    return `${base}/${(error.params as { missingProperty: string }).missingProperty}`;
  if (error.keyword === "additionalProperties") {
    return `${base}/${(error.params as { additionalProperty: string }).additionalProperty}`;
  }
  return base || "/";
}

/** Null when the result satisfies `result.schema`; otherwise `result_invalid` naming the failing path. */
export function checkResult(schema: Record<string, unknown>, result: unknown): Diagnostic | null {
  let validate = compiled.get(schema);
  if (!validate) {
    validate = ajv.compile(schema);
    compiled.set(schema, validate);
  }
  if (validate(result)) return null;
  const error = validate.errors?.[0];
  const path = error ? pathOf(error) : "/";
  return diagnostic(
    "result_invalid",
    `the result does not match result.schema at ${path}: ${error?.message ?? "invalid"}`,
    {
      path,
      metadata: error ? { keyword: error.keyword, schemaPath: error.schemaPath } : undefined,
    },
  );
}
