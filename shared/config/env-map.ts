import { mapping, quote, type YamlMap } from "./read.ts";
import { type ConfigFile, formatPath, type KeyPath } from "./source.ts";

/** A map of variable name to scalar value (numbers and booleans become strings). */
export function readStringMap(
  f: ConfigFile,
  obj: YamlMap,
  key: string,
  path: KeyPath,
): Record<string, string> | undefined {
  const value = obj[key];
  if (value === undefined || value === null) return {};
  const map = mapping(f, value, [...path, key]);
  if (!map) return undefined;
  const out: Record<string, string> = {};
  let ok = true;
  for (const [name, inner] of Object.entries(map)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
      f.report(
        [...path, key, name],
        "invalid_value",
        `variable name ${quote(name)} in "${formatPath([...path, key])}" may use only letters, digits and _, and must not start with a digit`,
      );
      ok = false;
    } else if (typeof inner === "string" || typeof inner === "number" || typeof inner === "boolean") {
      out[name] = String(inner);
    } else {
      f.report(
        [...path, key, name],
        "invalid_type",
        `"${formatPath([...path, key, name])}" must be a string, not ${inner === null ? "empty" : "a structure"}`,
      );
      ok = false;
    }
  }
  return ok ? out : undefined;
}
