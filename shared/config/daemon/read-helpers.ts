import { mapping, quote, str, type YamlMap } from "../read.ts";
import { type ConfigFile, formatPath, type KeyPath } from "../source.ts";

// route names and target names end up in URL paths and queue names
export const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

export function checkName(
  f: ConfigFile,
  path: KeyPath,
  name: string,
  pattern: RegExp,
  what: string,
): boolean {
  if (pattern.test(name)) return true;
  f.report(
    path,
    "invalid_value",
    `${what} name ${quote(name)} at "${formatPath(path)}" may use only letters, digits, ".", "_" and "-"`,
  );
  return false;
}

export function entries(f: ConfigFile, obj: YamlMap, key: string, path: KeyPath): [string, YamlMap][] {
  const value = obj[key];
  if (value === undefined || value === null) return [];
  const map = mapping(f, value, [...path, key]);
  if (!map) return [];
  const out: [string, YamlMap][] = [];
  for (const [name, inner] of Object.entries(map)) {
    const entry = mapping(f, inner, [...path, key, name]);
    if (entry) out.push([name, entry]);
  }
  return out;
}

export function child(
  f: ConfigFile,
  obj: YamlMap,
  key: string,
  path: KeyPath,
  hint = "",
): YamlMap | undefined {
  const value = obj[key];
  if (value === undefined || value === null) return undefined;
  return mapping(f, value, [...path, key], hint);
}

export function httpUrl(
  f: ConfigFile,
  obj: YamlMap,
  key: string,
  path: KeyPath,
  required: boolean,
): string | undefined {
  const value = str(f, obj, key, path, { required });
  if (value === undefined) return undefined;
  try {
    const url = new URL(value);
    if (url.protocol === "http:" || url.protocol === "https:") return value;
  } catch {}
  f.report(
    [...path, key],
    "invalid_value",
    `"${formatPath([...path, key])}" must be an http(s) URL such as https://host/path`,
  );
  return undefined;
}
