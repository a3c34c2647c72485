import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";
import { type Diagnostic, diagnostic } from "../../shared/diagnostics.ts";
import { HANDLER_SCHEMAS } from "../../shared/output-schemas.ts";

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

/** The last line of the output that parses as a JSON object, else the whole output when it is one. */
export function lastJsonObject(output: string): Record<string, unknown> | undefined {
  const lines = output.split(/\r?\n/);
  for (let index = lines.length - 1; index >= 0; index -= 1) {
    const line = lines[index]!.trim();
    if (!line.startsWith("{")) continue;
    try {
      const value = JSON.parse(line);
      if (value !== null && typeof value === "object" && !Array.isArray(value)) return value;
    } catch {
      // not JSON: keep looking upwards
    }
  }
  const whole = output.trim();
  const start = whole.lastIndexOf("\n{");
  for (const candidate of [whole, start >= 0 ? whole.slice(start + 1) : ""]) {
    if (!candidate.startsWith("{")) continue;
    try {
      const value = JSON.parse(candidate);
      if (value !== null && typeof value === "object" && !Array.isArray(value)) return value;
    } catch {
      // not JSON either: no result object in this output, which the caller reports
    }
  }
  return undefined;
}
