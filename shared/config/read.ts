import { parseDuration } from "./duration.ts";
import { isRemovedKey } from "./removed-keys.ts";
import { type ConfigFile, formatPath, type KeyPath } from "./source.ts";

/**
 * Typed readers over parsed YAML. Each one reports a precise problem (file, key path, fix)
 * and returns undefined on bad input, so validation carries on and finds every problem.
 * Values are quoted in messages only by callers that know the field cannot hold a secret.
 */

export type YamlMap = Record<string, unknown>;

export function isMapping(value: unknown): value is YamlMap {
  return typeof value === "object" && value !== null && !Array.isArray(value) && !(value instanceof Date);
}

export function describe(value: unknown): string {
  if (value === null || value === undefined) return "empty";
  if (Array.isArray(value)) return "a list";
  if (value instanceof Date) return "a date";
  if (typeof value === "object") return "a mapping";
  return `a ${typeof value}`;
}

/** A short quoted rendering of a value that is known not to be secret (names, enum values). */
export function quote(value: unknown): string {
  const text = typeof value === "string" ? value : (JSON.stringify(value) ?? String(value));
  return JSON.stringify(text.length > 60 ? `${text.slice(0, 57)}...` : text);
}

export function mapping(f: ConfigFile, value: unknown, path: KeyPath, hint = ""): YamlMap | undefined {
  if (isMapping(value)) return value;
  f.report(path, "invalid_type", `"${formatPath(path)}" must be a mapping, not ${describe(value)}${hint}`);
  return undefined;
}

/** Warns about keys outside `allowed`; removed keys are reported by the removed-key table instead. */
export function checkKeys(f: ConfigFile, obj: YamlMap, path: KeyPath, allowed: readonly string[]): void {
  for (const key of Object.keys(obj)) {
    if (allowed.includes(key) || isRemovedKey(f.file, [...path, key])) continue;
    f.report(
      [...path, key],
      "unknown_key",
      `unknown key "${formatPath([...path, key])}" is ignored - check its spelling; known keys here: ${allowed.join(", ")}`,
      "warning",
    );
  }
}

interface Opts {
  required?: boolean;
  /** appended to the "is required" message: how to fix it */
  hint?: string;
}

function missing(f: ConfigFile, obj: YamlMap, key: string, path: KeyPath, opts: Opts): boolean {
  if (obj[key] !== undefined && obj[key] !== null) return false;
  if (opts.required)
    f.report([...path, key], "required", `"${formatPath([...path, key])}" is required${opts.hint ?? ""}`);
  return true;
}

export function str(
  f: ConfigFile,
  obj: YamlMap,
  key: string,
  path: KeyPath,
  opts: Opts = {},
): string | undefined {
  if (missing(f, obj, key, path, opts)) return undefined;
  const value = obj[key];
  if (typeof value === "string" && value.trim() !== "") return value;
  const full = formatPath([...path, key]);
  if (typeof value === "string") f.report([...path, key], "invalid_value", `"${full}" must not be empty`);
  else f.report([...path, key], "invalid_type", `"${full}" must be a string, not ${describe(value)}`);
  return undefined;
}

export function bool(
  f: ConfigFile,
  obj: YamlMap,
  key: string,
  path: KeyPath,
  opts: Opts = {},
): boolean | undefined {
  if (missing(f, obj, key, path, opts)) return undefined;
  const value = obj[key];
  if (typeof value === "boolean") return value;
  f.report(
    [...path, key],
    "invalid_type",
    `"${formatPath([...path, key])}" must be a boolean (true or false)`,
  );
  return undefined;
}

export function int(
  f: ConfigFile,
  obj: YamlMap,
  key: string,
  path: KeyPath,
  opts: Opts & { min?: number; max?: number } = {},
): number | undefined {
  if (missing(f, obj, key, path, opts)) return undefined;
  const value = obj[key];
  const full = formatPath([...path, key]);
  if (typeof value !== "number" || !Number.isInteger(value)) {
    f.report([...path, key], "invalid_type", `"${full}" must be an integer, not ${describe(value)}`);
    return undefined;
  }
  if ((opts.min !== undefined && value < opts.min) || (opts.max !== undefined && value > opts.max)) {
    const range = opts.max === undefined ? `at least ${opts.min}` : `between ${opts.min} and ${opts.max}`;
    f.report([...path, key], "invalid_value", `"${full}" must be ${range} (got ${value})`);
    return undefined;
  }
  return value;
}

export function num(
  f: ConfigFile,
  obj: YamlMap,
  key: string,
  path: KeyPath,
  opts: Opts & { min?: number; max?: number } = {},
): number | undefined {
  if (missing(f, obj, key, path, opts)) return undefined;
  const value = obj[key];
  const full = formatPath([...path, key]);
  if (typeof value !== "number" || !Number.isFinite(value)) {
    f.report([...path, key], "invalid_type", `"${full}" must be a number, not ${describe(value)}`);
    return undefined;
  }
  if ((opts.min !== undefined && value < opts.min) || (opts.max !== undefined && value > opts.max)) {
    f.report(
      [...path, key],
      "invalid_value",
      `"${full}" must be between ${opts.min} and ${opts.max} (got ${value})`,
    );
    return undefined;
  }
  return value;
}

export function oneOf<T extends string>(
  f: ConfigFile,
  obj: YamlMap,
  key: string,
  path: KeyPath,
  allowed: readonly T[],
  opts: Opts = {},
): T | undefined {
  if (missing(f, obj, key, path, opts)) return undefined;
  const value = obj[key];
  if (typeof value === "string" && (allowed as readonly string[]).includes(value)) return value as T;
  f.report(
    [...path, key],
    "invalid_value",
    `"${formatPath([...path, key])}" must be one of ${allowed.join(", ")} (got ${quote(value)})`,
  );
  return undefined;
}

/** A list of non-empty strings; a single string is refused so `[a]` vs `a` mistakes surface. */
export function strList(
  f: ConfigFile,
  obj: YamlMap,
  key: string,
  path: KeyPath,
  opts: Opts = {},
): string[] | undefined {
  if (missing(f, obj, key, path, opts)) return undefined;
  const value = obj[key];
  const full = formatPath([...path, key]);
  if (!Array.isArray(value)) {
    f.report([...path, key], "invalid_type", `"${full}" must be a list of strings, e.g. ${key}: [a, b]`);
    return undefined;
  }
  const out: string[] = [];
  value.forEach((item, index) => {
    if (typeof item === "string" && item.trim() !== "") out.push(item);
    else f.report([...path, key, index], "invalid_type", `"${full}[${index}]" must be a non-empty string`);
  });
  return out.length === value.length ? out : undefined;
}

export function duration(
  f: ConfigFile,
  obj: YamlMap,
  key: string,
  path: KeyPath,
  fallbackMs: number,
): number | undefined {
  if (missing(f, obj, key, path, {})) return fallbackMs;
  const value = obj[key];
  const ms = typeof value === "string" ? parseDuration(value) : undefined;
  if (ms !== undefined) return ms;
  f.report(
    [...path, key],
    "invalid_value",
    `"${formatPath([...path, key])}" must be a duration such as 500ms, 30s, 20m or 1h (got ${quote(value)})`,
  );
  return undefined;
}
