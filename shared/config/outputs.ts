// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} is the configuration substitution syntax, quoted in messages
import { readAuthorList } from "./authors.ts";
import { readCodehostApp } from "./codehost-app.ts";
import { checkKeys, duration, int, mapping, quote, str, type YamlMap } from "./read.ts";
import { secretSource } from "./secrets.ts";
import { type ConfigFile, formatPath, type KeyPath } from "./source.ts";
import type { CodehostApp, CodehostConfig, CodehostCredential, OutputBinding } from "./types.ts";

/**
 * Readers for what publishing needs from daemon.yaml (`codehost`, `channels.chat.api_url`,
 * `queue.circuit_breaker` limits) and the checks tying a pipeline's outputs to those identities.
 */

export const DEFAULT_CODEHOST_API_URL = "https://api.github.com";
export const DEFAULT_GITLAB_API_URL = "https://gitlab.com/api/v4";
export const DEFAULT_CHAT_API_URL = "https://slack.com/api/";
export const DEFAULT_BREAKER_FAILURES = 5;
export const DEFAULT_BREAKER_COOLDOWN_MS = 15 * 60_000;

const BOT_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]*(\[bot\])?$/;
const PRINCIPAL_KEY = /^[A-Za-z0-9_.:-]+$/;

function httpUrl(f: ConfigFile, obj: YamlMap, path: KeyPath, example: string): string | undefined {
  const value = str(f, obj, "api_url", path);
  if (value === undefined) return undefined;
  try {
    const url = new URL(value);
    if (url.protocol === "http:" || url.protocol === "https:") return value;
  } catch {
    // reported below, like a URL of another scheme
  }
  f.report(
    [...path, "api_url"],
    "invalid_value",
    `"${formatPath([...path, "api_url"])}" must be an http(s) URL, e.g. ${example} (got ${quote(value)})`,
  );
  return undefined;
}

/**
 * `codehost: { kind?, api_url, token | token_ref | app, principals: { <id>: { token | token_ref | app } } }`.
 * `kind: gitlab` speaks GitLab's REST API v4 with a token (a project, group or bot user's access
 * token): GitLab has no Apps, so `app` is GitHub's alone.
 */
export function readCodehost(f: ConfigFile, root: YamlMap): CodehostConfig | undefined {
  if (root.codehost === undefined || root.codehost === null) return undefined;
  const raw = mapping(f, root.codehost, ["codehost"], " with api_url, token and principals");
  if (!raw) return undefined;
  checkKeys(
    f,
    raw,
    ["codehost"],
    ["kind", "api_url", "token", "token_ref", "app", "principals", "bot_name", "commands_from"],
  );
  const kind = readKind(f, raw);
  const botName = str(f, raw, "bot_name", ["codehost"]);
  if (botName !== undefined && !BOT_NAME.test(botName))
    f.report(
      ["codehost", "bot_name"],
      "invalid_value",
      `"codehost.bot_name" must be a login without "@" (letters, digits, "-", "_", "[bot]" allowed), e.g. svc-bot (got ${quote(botName)})`,
    );
  const commandsFrom = readAuthorList(f, raw, "commands_from", ["codehost"]);
  const apiUrl =
    kind === "gitlab"
      ? (httpUrl(f, raw, ["codehost"], "https://gitlab.example.com/api/v4") ?? DEFAULT_GITLAB_API_URL)
      : (httpUrl(f, raw, ["codehost"], "https://api.github.com or https://ghe.example.com/api/v3") ??
        DEFAULT_CODEHOST_API_URL);
  if (kind === "gitlab" && raw.app != null) {
    f.report(
      ["codehost", "app"],
      "invalid_value",
      '"codehost.app" is a GitHub App and GitLab has none - with kind: gitlab give "token" (a project, group or bot user\'s access token with the api scope)',
    );
    return undefined;
  }
  const hasToken = raw.token != null || raw.token_ref != null;
  if (hasToken && raw.app != null) {
    f.report(
      ["codehost", "app"],
      "secret_source_conflict",
      '"codehost" sets both a token and an app - keep one: "app" (a GitHub App, recommended) or "token"',
    );
    return undefined;
  }
  const token = hasToken
    ? secretSource(f, raw, ["codehost"], {
        secretKey: "token",
        refKey: "token_ref",
        expectedRef: "codehost/default",
      })
    : undefined;
  const app: CodehostApp | undefined =
    raw.app != null
      ? readCodehostApp(f, raw.app, ["codehost", "app"], "codehost/app-private-key")
      : undefined;
  const principals: Record<string, CodehostCredential> = {};
  const list =
    raw.principals == null
      ? {}
      : (mapping(
          f,
          raw.principals,
          ["codehost", "principals"],
          ' of principal id to { token }, e.g. "42": { token: ${ENV} }',
        ) ?? {});
  for (const [id, entry] of Object.entries(list)) {
    const path = ["codehost", "principals", id];
    if (!PRINCIPAL_KEY.test(id)) {
      f.report(
        path,
        "invalid_value",
        `principal id ${quote(id)} may use only letters, digits, ".", "_", ":" and "-"`,
      );
      continue;
    }
    const spec = mapping(
      f,
      entry,
      path,
      " such as { token: ${REVIEWER_BOT_TOKEN} } or { app: { id, private_key } }",
    );
    if (!spec) continue;
    checkKeys(f, spec, path, ["token", "token_ref", "app"]);
    if (spec.app != null && kind === "gitlab") {
      f.report(
        [...path, "app"],
        "invalid_value",
        `"${formatPath([...path, "app"])}" is a GitHub App and GitLab has none - give this principal a token`,
      );
      continue;
    }
    if (spec.app != null) {
      if (spec.token != null || spec.token_ref != null) {
        f.report(
          path,
          "secret_source_conflict",
          `"${formatPath(path)}" sets both a token and an app - keep one`,
        );
        continue;
      }
      const principalApp = readCodehostApp(
        f,
        spec.app,
        [...path, "app"],
        `codehost/principal/${id}/app-private-key`,
      );
      if (principalApp) principals[id] = { app: principalApp };
      continue;
    }
    const secret = secretSource(f, spec, path, {
      secretKey: "token",
      refKey: "token_ref",
      expectedRef: `codehost/principal/${id}`,
    });
    if (secret) principals[id] = { token: secret };
  }
  return {
    ...(kind === "gitlab" ? { kind } : {}),
    apiUrl,
    ...(token ? { token } : {}),
    ...(app ? { app } : {}),
    principals,
    ...(botName && BOT_NAME.test(botName) ? { botName } : {}),
    ...(commandsFrom ? { commandsFrom } : {}),
  };
}

function readKind(f: ConfigFile, raw: YamlMap): "github" | "gitlab" {
  const kind = str(f, raw, "kind", ["codehost"]);
  if (kind === undefined || kind === "github" || kind === "gitlab") return kind ?? "github";
  f.report(
    ["codehost", "kind"],
    "invalid_value",
    `"codehost.kind" must be github or gitlab (got ${quote(kind)})`,
  );
  return "github";
}

/** `channels.chat.api_url`: a Slack-compatible Web API base, with its trailing slash. */
export function readChatApiUrl(f: ConfigFile, chat: YamlMap): string {
  const value = httpUrl(f, chat, ["channels", "chat"], "https://slack.com/api");
  if (!value) return DEFAULT_CHAT_API_URL;
  return value.endsWith("/") ? value : `${value}/`;
}

/** `queue.circuit_breaker.failures` and `.cooldown`. */
export function readBreakerLimits(f: ConfigFile, breaker: YamlMap): { failures: number; cooldownMs: number } {
  const path = ["queue", "circuit_breaker"];
  const failures = int(f, breaker, "failures", path, { min: 1, max: 1000 }) ?? DEFAULT_BREAKER_FAILURES;
  const cooldownMs =
    duration(f, breaker, "cooldown", path, DEFAULT_BREAKER_COOLDOWN_MS) ?? DEFAULT_BREAKER_COOLDOWN_MS;
  return { failures, cooldownMs };
}

/** The principal id a pipeline's binding names, when it is a code-host principal. */
export function codehostPrincipalId(binding: string | undefined): string | undefined {
  const prefix = "codehost.principal.";
  return binding?.startsWith(prefix) ? binding.slice(prefix.length) : undefined;
}

/**
 * Every `codehost.principal.<id>` binding must name an entry of `codehost.principals`, and a
 * pipeline publishing through a code-host handler needs an identity to post as.
 */
export function checkPublishingIdentities(
  f: ConfigFile,
  draft: { principals: Record<string, string>; principal?: string; outputs: Record<string, OutputBinding> },
  codehost: CodehostConfig | undefined,
  handlerFamily: (handler: string) => string | undefined,
): void {
  for (const [binding, value] of Object.entries(draft.principals)) {
    const id = codehostPrincipalId(value);
    if (id === undefined || codehost?.principals[id]) continue;
    f.report(
      ["principals", binding],
      "unknown_principal",
      `"principals.${binding}" names ${quote(value)}, but daemon.yaml has no "codehost.principals.${id}" - add "codehost: { principals: { "${id}": { token: \${ENV_NAME} } } }" to daemon.yaml (defined: ${Object.keys(codehost?.principals ?? {}).join(", ") || "none"})`,
    );
  }
  const codehostKeys = Object.entries(draft.outputs)
    .filter(([, binding]) => handlerFamily(binding.handler) === "codehost")
    .map(([key]) => key);
  if (codehostKeys.length === 0) return;
  const bound = draft.principal ? codehostPrincipalId(draft.principals[draft.principal]) : undefined;
  if (bound !== undefined || codehost?.token || codehost?.app) return;
  for (const key of codehostKeys) {
    f.report(
      ["outputs", key, "handler"],
      "codehost_identity_missing",
      `"outputs.${key}" publishes through ${draft.outputs[key]!.handler}, but there is no code-host identity to post as - add "codehost: { app: { id: <App ID>, private_key: \${GITHUB_APP_PRIVATE_KEY} } }" (a GitHub App) or "codehost: { token: \${ENV_NAME} }" to daemon.yaml, or bind "principal:" to a codehost.principal.<id> of "codehost.principals"`,
    );
  }
}
