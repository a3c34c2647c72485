// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} is the configuration substitution syntax, quoted in messages
import { createPrivateKey } from "node:crypto";
import { checkKeys, describe, mapping, type YamlMap } from "./read.ts";
import { secretSource } from "./secrets.ts";
import { type ConfigFile, formatPath, type KeyPath } from "./source.ts";
import type { CodehostApp } from "./types.ts";

/**
 * `app: { id, private_key | secret_ref }` under `codehost` or a principal. An inline key is
 * parsed here so a truncated or non-RSA PEM is refused at load, not at the first publish; the key
 * itself never reaches a message.
 */
export function readCodehostApp(
  f: ConfigFile,
  value: unknown,
  path: KeyPath,
  expectedRef: string,
): CodehostApp | undefined {
  const raw = mapping(f, value, path, ' such as { id: 123456, private_key: "${GITHUB_APP_PRIVATE_KEY}" }');
  if (!raw) return undefined;
  checkKeys(f, raw, path, ["id", "private_key", "secret_ref"]);
  const id = appId(f, raw, path);
  const privateKey = secretSource(f, raw, path, {
    secretKey: "private_key",
    refKey: "secret_ref",
    expectedRef,
  });
  if (privateKey?.kind === "inline" && !isRsaPem(privateKey.value)) {
    f.report(
      [...path, "private_key"],
      "invalid_value",
      `"${formatPath([...path, "private_key"])}" is not an RSA private key in PEM form - use the .pem file GitHub generated for the App (Settings > Developer settings > GitHub Apps > Private keys)`,
    );
    return undefined;
  }
  return id !== undefined && privateKey ? { id, privateKey } : undefined;
}

/** A number, or a string of digits (what `${GITHUB_APP_ID}` substitutes to). */
function appId(f: ConfigFile, raw: YamlMap, path: KeyPath): number | undefined {
  const value = raw.id;
  const parsed =
    typeof value === "number"
      ? value
      : typeof value === "string" && /^\d+$/.test(value)
        ? Number(value)
        : Number.NaN;
  if (Number.isSafeInteger(parsed) && parsed > 0) return parsed;
  f.report(
    [...path, "id"],
    value === undefined ? "required" : "invalid_value",
    `"${formatPath([...path, "id"])}" must be the App's numeric id (its settings page shows "App ID"), not ${describe(value)}`,
  );
  return undefined;
}

export function isRsaPem(value: string): boolean {
  try {
    return createPrivateKey(value).asymmetricKeyType === "rsa";
  } catch {
    // any parse failure means the same thing to the operator: not a usable PEM key
    return false;
  }
}
