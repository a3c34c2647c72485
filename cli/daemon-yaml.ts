import { substituteEnv } from "../shared/config/secrets.ts";
import { ConfigFile } from "../shared/config/source.ts";
import type { ConfigProblem } from "../shared/config/types.ts";

/**
 * daemon.yaml read as written, for commands that must work where the configuration does not load
 * whole (the daemon's variables unset in this shell): `svc setup github`, `svc setup webhook`'s
 * GitLab form, `svc init`. Values are substituted with the loader's own `substituteEnv`.
 */

const ENV_REFERENCE = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** The `${NAME}` variables a text reads, each once, in order of first use. */
export function envVariables(text: string): string[] {
  return [...new Set([...text.matchAll(ENV_REFERENCE)].map((match) => match[1]!))];
}

export function asMap(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/** A string with its `${NAME}`s from `env`; undefined when it is no string or a variable is unset. */
export function substituted(value: unknown, env: NodeJS.ProcessEnv): string | undefined {
  if (typeof value !== "string") return undefined;
  const problems: ConfigProblem[] = [];
  const out = substituteEnv(new ConfigFile("daemon.yaml", problems), value, env);
  return problems.length === 0 ? String(out) : undefined;
}

/** An http(s) URL without query or fragment, its trailing slashes removed; undefined otherwise. */
export function httpUrl(value: string | undefined): string | undefined {
  if (!value) return undefined;
  try {
    const url = new URL(value);
    if ((url.protocol === "https:" || url.protocol === "http:") && !url.search && !url.hash)
      return value.replace(/\/+$/, "");
  } catch {
    // not a URL: the caller names the key instead
  }
  return undefined;
}
