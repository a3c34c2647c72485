import { AGENT_CLI_RUNTIMES, readAgentCliTarget } from "../agent-cli-targets.ts";
import { readAuthFailure, readCredentialEnv, readMaxTurns } from "../agent-tools.ts";
import { checkKeys, duration, mapping, oneOf, quote, str, strList, type YamlMap } from "../read.ts";
import { secretSource } from "../secrets.ts";
import { type ConfigFile, formatPath, type KeyPath } from "../source.ts";
import type { Target, TargetCredential } from "../types.ts";
import { readPrice } from "./price.ts";
import { checkName, entries, httpUrl, NAME } from "./read-helpers.ts";

export const DEFAULT_TARGET_TIMEOUT_MS = 600_000;
const RUNTIMES = ["command", "openai", ...AGENT_CLI_RUNTIMES] as const;

export function readTargets(f: ConfigFile, root: YamlMap): Record<string, Target> {
  const targets: Record<string, Target> = {};
  for (const [name, raw] of entries(f, root, "targets", [])) {
    const path = ["targets", name];
    if (!checkName(f, path, name, NAME, "target")) continue;
    const runtime = oneOf(f, raw, "runtime", path, RUNTIMES, { required: true });
    const timeoutMs = duration(f, raw, "timeout", path, DEFAULT_TARGET_TIMEOUT_MS);
    const credentials = readCredentials(f, raw, path);
    if (runtime === "command") {
      if (raw.price != null) {
        f.report(
          [...path, "price"],
          "invalid_value",
          `"${formatPath([...path, "price"])}" applies to openai, claude-code and codex targets - a command agent calls its model API itself, so svc cannot count its tokens; delete the key`,
        );
        continue;
      }
      checkKeys(f, raw, path, ["runtime", "command", "model", "timeout", "credentials", "auth_failure"]);
      const authFailure = readAuthFailure(f, raw, path);
      const command = strList(f, raw, "command", path, {
        required: true,
        hint: ' - give the agent CLI as an argv list, e.g. command: ["./bin/agent", "--json"]',
      });
      if (command && command.length === 0)
        f.report(
          [...path, "command"],
          "invalid_value",
          `"${formatPath([...path, "command"])}" must not be empty`,
        );
      const model = str(f, raw, "model", path);
      if (command?.length && timeoutMs !== undefined && credentials && authFailure !== undefined) {
        targets[name] = {
          ...{ name, runtime, command, timeoutMs, credentials, ...(model ? { model } : {}) },
          ...(authFailure ? { authFailure } : {}),
        };
      }
    } else if (runtime === "openai") {
      const keys = ["runtime", "base_url", "model", "timeout", "credentials", "max_turns", "price"];
      checkKeys(f, raw, path, keys);
      const maxTurns = readMaxTurns(f, raw, path);
      const price = readPrice(f, raw, path);
      const baseUrl = httpUrl(f, raw, "base_url", path, true);
      const model = str(f, raw, "model", path, { required: true });
      if (baseUrl && model && timeoutMs !== undefined && credentials && maxTurns && price !== undefined) {
        targets[name] = {
          ...{ name, runtime, baseUrl, model, timeoutMs, credentials, maxTurns },
          ...(price ? { price } : {}),
        };
      }
    } else if (runtime) {
      const httpUrlOf = (key: string) => httpUrl(f, raw, key, path, false);
      const target = readAgentCliTarget(f, raw, path, {
        name,
        runtime,
        timeoutMs,
        credentials,
        httpUrl: httpUrlOf,
      });
      const price = readPrice(f, raw, path);
      if (target && price !== undefined) targets[name] = price ? { ...target, price } : target;
    }
  }
  return targets;
}

function readCredentials(f: ConfigFile, raw: YamlMap, path: KeyPath): TargetCredential[] | undefined {
  const value = raw.credentials;
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) {
    f.report(
      [...path, "credentials"],
      "invalid_type",
      `"${formatPath([...path, "credentials"])}" must be a list of { name, secret | secret_ref }`,
    );
    return undefined;
  }
  const out: TargetCredential[] = [];
  const seen = new Set<string>();
  let ok = true;
  value.forEach((item, index) => {
    const itemPath = [...path, "credentials", index];
    const entry = mapping(f, item, itemPath);
    if (!entry) {
      ok = false;
      return;
    }
    checkKeys(f, entry, itemPath, ["name", "secret", "secret_ref", "env"]);
    const env = readCredentialEnv(f, entry, itemPath);
    const name = str(f, entry, "name", itemPath, { required: true });
    const secret = secretSource(f, entry, itemPath);
    if (name && seen.has(name)) {
      f.report(
        [...itemPath, "name"],
        "duplicate_name",
        `credential name ${quote(name)} appears twice in "${formatPath([...path, "credentials"])}" - give each credential its own name`,
      );
      ok = false;
    }
    if (name) seen.add(name);
    if (name && secret) out.push({ name, secret, ...(env ? { env } : {}) });
    else ok = false;
  });
  return ok ? out : undefined;
}
