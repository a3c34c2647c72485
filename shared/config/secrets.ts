import { describe, isMapping, type YamlMap } from "./read.ts";
import type { SecretSource } from "./secret-source.ts";
import { type ConfigFile, formatPath, type KeyPath } from "./source.ts";

const ENV_REFERENCE = /\$\{([^}]*)\}/g;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Replaces `${NAME}` in every string value (keys are left alone). An unset or empty variable is a
 * problem naming the variable and the key path; the value itself is never part of any message.
 * Returns a new tree: the parsed document stays as written.
 */
export function substituteEnv(
  f: ConfigFile,
  value: unknown,
  env: NodeJS.ProcessEnv,
  path: KeyPath = [],
): unknown {
  if (typeof value === "string") {
    if (!value.includes("${")) return value;
    return value.replace(ENV_REFERENCE, (whole, name: string) => {
      const where = formatPath(path);
      if (!ENV_NAME.test(name)) {
        f.report(
          path,
          "invalid_value",
          `"${where}" has a malformed substitution - write \${NAME} with letters, digits and _`,
        );
        return whole;
      }
      const resolved = env[name];
      if (resolved === undefined || resolved === "") {
        f.report(
          path,
          "env_unset",
          `"${where}" uses \${${name}}, but the environment variable ${name} is not set - export ${name} before running svc`,
        );
        return whole;
      }
      return resolved;
    });
  }
  if (Array.isArray(value)) return value.map((item, index) => substituteEnv(f, item, env, [...path, index]));
  if (isMapping(value)) {
    const out: YamlMap = {};
    for (const [key, inner] of Object.entries(value)) out[key] = substituteEnv(f, inner, env, [...path, key]);
    return out;
  }
  return value;
}

/**
 * Exactly one of `<secretKey>` (inline, after substitution) and `<refKey>` (a stored secret).
 * `expectedRef`, when given, is the only accepted stored-secret name. Never quotes the secret.
 */
export function secretSource(
  f: ConfigFile,
  obj: YamlMap,
  path: KeyPath,
  options: { secretKey?: string; refKey?: string; expectedRef?: string; howToStore?: string } = {},
): SecretSource | undefined {
  const secretKey = options.secretKey ?? "secret";
  const refKey = options.refKey ?? "secret_ref";
  const hasSecret = obj[secretKey] !== undefined && obj[secretKey] !== null;
  const hasRef = obj[refKey] !== undefined && obj[refKey] !== null;
  const where = formatPath(path);
  if (hasSecret === hasRef) {
    f.report(
      path,
      "secret_source_conflict",
      `"${where}" must set exactly one of "${secretKey}" and "${refKey}"${hasSecret ? " - remove one of them" : ` - add "${secretKey}: \${ENV_NAME}" or "${refKey}: ${options.expectedRef ?? "<stored secret name>"}"`}`,
    );
    return undefined;
  }
  if (hasSecret) {
    const value = obj[secretKey];
    if (typeof value !== "string" || value === "") {
      f.report(
        [...path, secretKey],
        "invalid_type",
        `"${formatPath([...path, secretKey])}" must be a non-empty string, not ${describe(value)} - quote the value or use \${ENV_NAME}`,
      );
      return undefined;
    }
    return { kind: "inline", value };
  }
  const ref = obj[refKey];
  const refPath = formatPath([...path, refKey]);
  if (typeof ref !== "string" || ref.trim() === "") {
    f.report(
      [...path, refKey],
      "invalid_type",
      `"${refPath}" must be a stored secret name, not ${describe(ref)}`,
    );
    return undefined;
  }
  if (options.expectedRef !== undefined && ref !== options.expectedRef) {
    f.report(
      [...path, refKey],
      "secret_ref_name",
      `"${refPath}" must be the full secret name "${options.expectedRef}"${options.howToStore ? ` - ${options.howToStore}` : ""}`,
    );
    return undefined;
  }
  return { kind: "stored", name: ref };
}
