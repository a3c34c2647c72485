import { unknownScopes } from "../scopes.ts";
import { AGENT_CLI_RUNTIMES, readAgentCliTarget } from "./agent-cli-targets.ts";
import { readAuthFailure, readCredentialEnv, readMaxTurns } from "./agent-tools.ts";
import { readKnowledgeSettings } from "./knowledge.ts";
import { readLog } from "./log.ts";
import { readMetrics, readWorkerMetricsPort } from "./metrics.ts";
import { isLoopbackHost, parseAddressRange } from "./network.ts";
import { readBreakerLimits, readChatApiUrl, readCodehost } from "./outputs.ts";
import {
  bool,
  checkKeys,
  duration,
  int,
  isMapping,
  mapping,
  oneOf,
  quote,
  str,
  strList,
  type YamlMap,
} from "./read.ts";
import { secretSource } from "./secrets.ts";
import { type ConfigFile, formatPath, type KeyPath } from "./source.ts";
import type {
  ApiTokenConfig,
  BrokerConfig,
  ConfigSnapshot,
  HostTool,
  SecretSource,
  Target,
  TargetCredential,
  VerifyKind,
  WebhookSource,
} from "./types.ts";

/** The part of the snapshot `daemon.yaml` defines. */
export type DaemonSettings = Omit<
  ConfigSnapshot,
  "dir" | "pipelines" | "agents" | "skills" | "policies" | "members"
>;

export const DEFAULT_HOST = "127.0.0.1";
export const DEFAULT_PORT = 7420;
export const DEFAULT_MAX_BODY_BYTES = 1_048_576;
export const DEFAULT_TARGET_TIMEOUT_MS = 600_000;
export const DEFAULT_GRACE_MS = 30_000;
export const DEFAULT_CONCURRENCY = 4;
export const DEFAULT_HEARTBEAT_MS = 10_000;
export const DEFAULT_CHECKOUT_RETENTION_DAYS = 30;
export const DEFAULT_TRANSCRIPT_RETENTION_DAYS = 90;

const RUNTIMES = ["command", "openai", ...AGENT_CLI_RUNTIMES] as const;

export const VERIFY_KINDS: readonly VerifyKind[] = ["bearer", "codehost", "tracker"];
export const HOST_TOOL_INPUT_TYPES = ["string", "number", "integer", "boolean"] as const;

// route names and target names end up in URL paths and queue names
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
const TOOL_NAME = /^[A-Za-z0-9_-]+$/;
const REPO_NAME = /^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/;
const ARG_REFERENCE = /\$([A-Za-z_][A-Za-z0-9_]*)/g;

const TOP_LEVEL = [
  "server",
  "webhooks",
  "targets",
  "ask",
  "knowledge",
  "repos",
  "codehost",
  "channels",
  "queue",
  "host_tools",
  "auth",
  "worker",
  "workspaces",
  "metrics",
  "log",
  // containers of removed keys only: their removed children are reported, the rest is ignored
  "defaults",
  "lifecycle",
  "sandboxes",
  "agents",
  "orchestrator",
  "tracing",
];

function checkName(f: ConfigFile, path: KeyPath, name: string, pattern: RegExp, what: string): boolean {
  if (pattern.test(name)) return true;
  f.report(
    path,
    "invalid_value",
    `${what} name ${quote(name)} at "${formatPath(path)}" may use only letters, digits, ".", "_" and "-"`,
  );
  return false;
}

function entries(f: ConfigFile, obj: YamlMap, key: string, path: KeyPath): [string, YamlMap][] {
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

function child(f: ConfigFile, obj: YamlMap, key: string, path: KeyPath, hint = ""): YamlMap | undefined {
  const value = obj[key];
  if (value === undefined || value === null) return undefined;
  return mapping(f, value, [...path, key], hint);
}

/** Names declared in daemon.yaml, valid or not: references to a broken entry are not reported twice. */
export interface DeclaredNames {
  targets: ReadonlySet<string>;
  bots: ReadonlySet<string>;
}

export function declaredNames(data: unknown): DeclaredNames {
  const root = isMapping(data) ? data : {};
  const keys = (value: unknown) => new Set(isMapping(value) ? Object.keys(value) : []);
  const chat = isMapping(root.channels) && isMapping(root.channels.chat) ? root.channels.chat : {};
  return { targets: keys(root.targets), bots: keys(chat.bots) };
}

export function readDaemon(f: ConfigFile, data: unknown, env: NodeJS.ProcessEnv): DaemonSettings {
  const root: YamlMap = data === null || data === undefined ? {} : (mapping(f, data, []) ?? {});
  checkKeys(f, root, [], TOP_LEVEL);
  const declared = declaredNames(root);

  const targets = readTargets(f, root);
  const targetExists = (path: KeyPath, names: string[] | undefined) => {
    for (const [index, name] of (names ?? []).entries()) {
      if (!declared.targets.has(name)) {
        f.report(
          [...path, index],
          "unknown_target",
          `target ${quote(name)} at "${formatPath(path)}[${index}]" is not defined - add it to the top-level "targets:" map (defined: ${Object.keys(targets).join(", ") || "none"})`,
        );
      }
    }
  };

  const ask = readAsk(f, root);
  targetExists(["ask", "targets"], ask.targets);
  for (const [index, name] of ask.targets.entries()) {
    const runtime = targets[name]?.runtime;
    if (runtime !== "claude-code" && runtime !== "codex") continue;
    f.report(
      ["ask", "targets", index],
      "invalid_value",
      `target ${quote(name)} at "ask.targets[${index}]" runs ${runtime}, an agent CLI that cannot answer /ask - name an openai or command target`,
    );
  }

  const knowledge = readKnowledgeSettings(f, root);
  targetExists(["knowledge", "retrieval", "rewrite", "targets"], knowledge.retrieval.rewrite.targets);

  return {
    server: readServer(f, root, env),
    webhooks: readWebhooks(f, root),
    targets,
    ask,
    knowledge,
    repos: readRepos(f, root),
    ...withCodehost(readCodehost(f, root)),
    channels: readChannels(f, root),
    queue: readQueue(f, root),
    hostTools: readHostTools(f, root),
    auth: readAuth(f, root),
    worker: readWorker(f, root),
    workspaces: readWorkspaces(f, root),
    ...(root.metrics !== undefined ? { metrics: readMetrics(f, root) } : {}),
    ...withLog(readLog(f, root)),
  };
}

function readServer(f: ConfigFile, root: YamlMap, env: NodeJS.ProcessEnv): DaemonSettings["server"] {
  const server = child(f, root, "server", []) ?? {};
  checkKeys(f, server, ["server"], ["host", "port", "trusted_proxies"]);
  let host = str(f, server, "host", ["server"]) ?? DEFAULT_HOST;
  let port = int(f, server, "port", ["server"], { min: 1, max: 65_535 }) ?? DEFAULT_PORT;
  // the environment wins, so the off-loopback checks below see the address the ingress really binds
  const envHost = env.SVC_HOST?.trim();
  if (envHost) host = envHost;
  const envPort = env.SVC_PORT?.trim();
  if (envPort) {
    const parsed = Number(envPort);
    // 0 asks the kernel for a free port (tests, several ingresses on one host); the ingress logs the port it bound
    if (Number.isInteger(parsed) && parsed >= 0 && parsed <= 65_535) port = parsed;
    else
      f.report(
        ["server", "port"],
        "invalid_value",
        `the environment variable SVC_PORT (overriding "server.port") must be a port number between 0 and 65535, 0 for any free port (got ${quote(envPort)})`,
      );
  }
  return { host, port, trustedProxies: readTrustedProxies(f, server) };
}

function readTrustedProxies(f: ConfigFile, server: YamlMap): string[] {
  const list = strList(f, server, "trusted_proxies", ["server"]) ?? [];
  const bad = list.findIndex((entry) => !parseAddressRange(entry));
  if (bad === -1) return list;
  f.report(
    ["server", "trusted_proxies", bad],
    "invalid_value",
    `"server.trusted_proxies[${bad}]" (${quote(list[bad]!)}) must be an IP address or a CIDR range such as 10.0.0.5, 10.0.0.0/8 or fd00::/8 - host names are not resolved`,
  );
  return [];
}

function readWebhooks(f: ConfigFile, root: YamlMap): DaemonSettings["webhooks"] {
  const webhooks = child(f, root, "webhooks", []) ?? {};
  checkKeys(f, webhooks, ["webhooks"], ["sources", "max_body_bytes"]);
  const maxBodyBytes =
    int(f, webhooks, "max_body_bytes", ["webhooks"], { min: 1, max: 1_073_741_824 }) ??
    DEFAULT_MAX_BODY_BYTES;
  const sources: Record<string, WebhookSource> = {};
  for (const [name, raw] of entries(f, webhooks, "sources", ["webhooks"])) {
    const path = ["webhooks", "sources", name];
    if (!checkName(f, path, name, NAME, "webhook source")) continue;
    checkKeys(f, raw, path, ["verify", "secret", "secret_ref"]);
    const verify = oneOf(f, raw, "verify", path, VERIFY_KINDS, {
      required: true,
      hint: " - bearer serves trigger.webhook, codehost serves trigger.codehost, tracker serves trigger.tracker",
    });
    const secret = secretSource(f, raw, path, {
      expectedRef: `webhook/${name}`,
      howToStore: `store it with "svc setup webhook ${name} --secret-env <ENV_NAME>"`,
    });
    if (verify && secret) sources[name] = { name, verify, secret };
  }
  return { maxBodyBytes, sources };
}

function readTargets(f: ConfigFile, root: YamlMap): Record<string, Target> {
  const targets: Record<string, Target> = {};
  for (const [name, raw] of entries(f, root, "targets", [])) {
    const path = ["targets", name];
    if (!checkName(f, path, name, NAME, "target")) continue;
    const runtime = oneOf(f, raw, "runtime", path, RUNTIMES, { required: true });
    const timeoutMs = duration(f, raw, "timeout", path, DEFAULT_TARGET_TIMEOUT_MS);
    const credentials = readCredentials(f, raw, path);
    if (runtime === "command") {
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
      checkKeys(f, raw, path, ["runtime", "base_url", "model", "timeout", "credentials", "max_turns"]);
      const maxTurns = readMaxTurns(f, raw, path);
      const baseUrl = httpUrl(f, raw, "base_url", path, true);
      const model = str(f, raw, "model", path, { required: true });
      if (baseUrl && model && timeoutMs !== undefined && credentials && maxTurns) {
        targets[name] = { name, runtime, baseUrl, model, timeoutMs, credentials, maxTurns };
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
      if (target) targets[name] = target;
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

function httpUrl(
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

function readAsk(f: ConfigFile, root: YamlMap): DaemonSettings["ask"] {
  const hint =
    ' - svc does not boot without it; add "ask: { targets: [<target name>, ...] }" naming targets of the top-level "targets:" map';
  if (root.ask === undefined || root.ask === null) {
    f.report(["ask"], "required", `"ask" is required${hint}`);
    return { targets: [] };
  }
  const ask = mapping(f, root.ask, ["ask"]);
  if (!ask) return { targets: [] };
  checkKeys(f, ask, ["ask"], ["targets"]);
  const targets = strList(f, ask, "targets", ["ask"], { required: true, hint });
  if (targets && targets.length === 0)
    f.report(["ask", "targets"], "required", `"ask.targets" must not be empty${hint}`);
  return { targets: targets ?? [] };
}

function readRepos(f: ConfigFile, root: YamlMap): DaemonSettings["repos"] {
  const repos: DaemonSettings["repos"] = {};
  for (const [name, raw] of entries(f, root, "repos", [])) {
    const path = ["repos", name];
    if (!REPO_NAME.test(name)) {
      f.report(
        path,
        "invalid_value",
        `repository key ${quote(name)} must be written <owner>/<name>, e.g. acme/widgets`,
      );
      continue;
    }
    checkKeys(f, raw, path, ["clone_url"]);
    const cloneUrl = str(f, raw, "clone_url", path, {
      required: true,
      hint: ", e.g. clone_url: https://github.com/acme/widgets.git",
    });
    if (cloneUrl) repos[name] = { cloneUrl };
  }
  return repos;
}

function withLog(log: DaemonSettings["log"]): Pick<DaemonSettings, "log"> {
  return log ? { log } : {};
}

function withCodehost(codehost: DaemonSettings["codehost"]): Pick<DaemonSettings, "codehost"> {
  return codehost ? { codehost } : {};
}

function readChannels(f: ConfigFile, root: YamlMap): DaemonSettings["channels"] {
  const channels = child(f, root, "channels", []) ?? {};
  checkKeys(f, channels, ["channels"], ["chat"]);
  const chat = child(f, channels, "chat", ["channels"]) ?? {};
  checkKeys(f, chat, ["channels", "chat"], ["bots", "api_url"]);
  const bots: Record<string, { token: SecretSource }> = {};
  for (const [name, raw] of entries(f, chat, "bots", ["channels", "chat"])) {
    const path = ["channels", "chat", "bots", name];
    checkKeys(f, raw, path, ["token", "token_ref"]);
    const token = secretSource(f, raw, path, {
      secretKey: "token",
      refKey: "token_ref",
      expectedRef: `chat/${name}`,
    });
    if (token) bots[name] = { token };
  }
  return { chat: { apiUrl: readChatApiUrl(f, chat), bots } };
}

function readQueue(f: ConfigFile, root: YamlMap): DaemonSettings["queue"] {
  const queue = child(f, root, "queue", []) ?? {};
  checkKeys(f, queue, ["queue"], ["circuit_breaker"]);
  const breaker = child(f, queue, "circuit_breaker", ["queue"]);
  if (!breaker) return {};
  checkKeys(f, breaker, ["queue", "circuit_breaker"], ["escalate", "failures", "cooldown"]);
  const limits = readBreakerLimits(f, breaker);
  const escalate = child(f, breaker, "escalate", ["queue", "circuit_breaker"]);
  if (!escalate) return { circuitBreaker: { ...limits } };
  const path = ["queue", "circuit_breaker", "escalate"];
  checkKeys(f, escalate, path, ["chat"]);
  if (escalate.chat === undefined || escalate.chat === null)
    return { circuitBreaker: { ...limits, escalate: {} } };
  if (!isMapping(escalate.chat)) {
    f.report(
      [...path, "chat"],
      "invalid_type",
      '"queue.circuit_breaker.escalate.chat" must be an object { bot, channel } - a bare channel name is refused; write chat: { bot: <name from channels.chat.bots>, channel: <channel id> }',
    );
    return { circuitBreaker: { ...limits, escalate: {} } };
  }
  const chatTarget = readChatTarget(f, escalate.chat, [...path, "chat"], declaredNames(root).bots);
  return { circuitBreaker: { ...limits, escalate: chatTarget ? { chat: chatTarget } : {} } };
}

/** `{ bot, channel }` with `bot` an entry of `channels.chat.bots`; shared with the chat output handler. */
export function readChatTarget(
  f: ConfigFile,
  raw: YamlMap,
  path: KeyPath,
  declaredBots: ReadonlySet<string> | undefined,
): { bot: string; channel: string } | undefined {
  checkKeys(f, raw, path, ["bot", "channel"]);
  const bot = str(f, raw, "bot", path, {
    required: true,
    hint: " - name an entry of channels.chat.bots in daemon.yaml",
  });
  const channel = str(f, raw, "channel", path, {
    required: true,
    hint: " - give the chat channel id, e.g. C0123456",
  });
  if (bot && declaredBots && !declaredBots.has(bot)) {
    f.report(
      [...path, "bot"],
      "unknown_bot",
      `chat bot ${quote(bot)} at "${formatPath([...path, "bot"])}" is not defined - add it to "channels.chat.bots" in daemon.yaml (defined: ${[...declaredBots].join(", ") || "none"})`,
    );
    return undefined;
  }
  return bot && channel ? { bot, channel } : undefined;
}

function readHostTools(f: ConfigFile, root: YamlMap): Record<string, HostTool> {
  const tools: Record<string, HostTool> = {};
  for (const [name, raw] of entries(f, root, "host_tools", [])) {
    const path = ["host_tools", name];
    if (!checkName(f, path, name, TOOL_NAME, "host tool")) continue;
    checkKeys(f, raw, path, ["description", "input", "exec", "args", "stdin", "env"]);
    const description = str(f, raw, "description", path, {
      required: true,
      hint: " - say what the tool does; the agent reads it",
    });
    const input: HostTool["input"] = {};
    for (const [field, spec] of entries(f, raw, "input", path)) {
      const fieldPath = [...path, "input", field];
      checkKeys(f, spec, fieldPath, ["type", "required", "description"]);
      const type = oneOf(f, spec, "type", fieldPath, HOST_TOOL_INPUT_TYPES, { required: true });
      const required = bool(f, spec, "required", fieldPath) ?? false;
      const description = str(f, spec, "description", fieldPath);
      if (type) input[field] = { type, required, ...(description ? { description } : {}) };
    }
    let exec = str(f, raw, "exec", path, {
      required: true,
      hint: " - give the explicit path of the executable, e.g. exec: /usr/bin/npx",
    });
    if (exec && (!exec.startsWith("/") || exec.includes("$"))) {
      f.report(
        [...path, "exec"],
        "invalid_value",
        `"${formatPath([...path, "exec"])}" must be an explicit absolute executable path without input references - pass inputs through "args"`,
      );
      exec = undefined;
    }
    const args = strList(f, raw, "args", path) ?? [];
    const declared = Object.keys(input);
    const checkRefs = (text: string, where: KeyPath) => {
      for (const match of text.matchAll(ARG_REFERENCE)) {
        if (!declared.includes(match[1]!)) {
          f.report(
            where,
            "invalid_value",
            `"${formatPath(where)}" references $${match[1]}, which is not a field of "${formatPath([...path, "input"])}" - declare it there or remove the reference`,
          );
        }
      }
    };
    for (const [index, arg] of args.entries()) checkRefs(arg, [...path, "args", index]);
    const stdin = str(f, raw, "stdin", path);
    if (stdin) checkRefs(stdin, [...path, "stdin"]);
    const toolEnv = readStringMap(f, raw, "env", path);
    if (description && exec && toolEnv) {
      tools[name] = { name, description, input, exec, args, ...(stdin ? { stdin } : {}), env: toolEnv };
    }
  }
  return tools;
}

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

function readAuth(f: ConfigFile, root: YamlMap): DaemonSettings["auth"] {
  const auth = child(f, root, "auth", []);
  if (!auth) return null;
  checkKeys(f, auth, ["auth"], ["tokens", "broker"]);
  const tokens: Record<string, ApiTokenConfig> = {};
  for (const [name, raw] of entries(f, auth, "tokens", ["auth"])) {
    const path = ["auth", "tokens", name];
    checkKeys(f, raw, path, ["scopes", "secret", "secret_ref"]);
    const scopes = strList(f, raw, "scopes", path, {
      required: true,
      hint: " - list scopes such as [triggers:read, pipelines:invoke]",
    });
    for (const scope of unknownScopes(scopes ?? [])) {
      const index = scopes!.indexOf(scope);
      f.report(
        [...path, "scopes", index],
        "unknown_scope",
        `scope ${quote(scope)} of token "${name}" is outside the scope vocabulary, so the token will be refused on every route - use scopes such as workloads:read, triggers:read, pipelines:invoke, knowledge:read, admin or *`,
        "warning",
      );
    }
    const secret = secretSource(f, raw, path, {
      expectedRef: `token/${name}`,
    });
    if (scopes && secret) tokens[name] = { name, scopes, secret };
  }
  const broker = readBroker(f, auth);
  return broker ? { tokens, broker } : { tokens };
}

function readBroker(f: ConfigFile, auth: YamlMap): BrokerConfig | undefined {
  const raw = child(f, auth, "broker", ["auth"]);
  if (!raw) return undefined;
  const path = ["auth", "broker"];
  checkKeys(f, raw, path, ["issuer", "audience", "jwks_url", "public_key", "secret", "secret_ref"]);
  const issuer = str(f, raw, "issuer", path);
  const audience = str(f, raw, "audience", path);
  const keySources = ["jwks_url", "public_key", "secret", "secret_ref"].filter(
    (key) => raw[key] !== undefined && raw[key] !== null,
  );
  const jwks = keySources.includes("jwks_url") ? 1 : 0;
  const pem = keySources.includes("public_key") ? 1 : 0;
  const shared = keySources.includes("secret") || keySources.includes("secret_ref") ? 1 : 0;
  if (jwks + pem + shared !== 1) {
    f.report(
      path,
      "secret_source_conflict",
      `"auth.broker" must set exactly one of "jwks_url", "public_key" and "secret" (or "secret_ref") - ${keySources.length ? "keep one of them" : "add the key that verifies the broker's tokens"}`,
    );
    return undefined;
  }
  const broker: BrokerConfig = { ...(issuer ? { issuer } : {}), ...(audience ? { audience } : {}) };
  if (jwks) {
    const url = httpUrl(f, raw, "jwks_url", path, true);
    if (!url) return undefined;
    broker.jwksUrl = url;
  } else if (pem) {
    const key = str(f, raw, "public_key", path, { required: true });
    if (!key) return undefined;
    broker.publicKey = key;
  } else {
    const secret = secretSource(f, raw, path, { expectedRef: "broker/secret" });
    if (!secret) return undefined;
    broker.secret = secret;
  }
  return broker;
}

function readWorker(f: ConfigFile, root: YamlMap): DaemonSettings["worker"] {
  const worker = child(f, root, "worker", []) ?? {};
  checkKeys(f, worker, ["worker"], ["concurrency", "grace_period", "metrics_port", "heartbeat"]);
  return {
    ...readWorkerMetricsPort(f, worker),
    concurrency: int(f, worker, "concurrency", ["worker"], { min: 1, max: 1024 }) ?? DEFAULT_CONCURRENCY,
    graceMs: duration(f, worker, "grace_period", ["worker"], DEFAULT_GRACE_MS) ?? DEFAULT_GRACE_MS,
    heartbeatMs: readHeartbeat(f, worker),
  };
}

/** `worker.heartbeat`: how often a held run renews its lease; 3 missed and it is retried elsewhere. */
function readHeartbeat(f: ConfigFile, worker: YamlMap): number {
  const ms = duration(f, worker, "heartbeat", ["worker"], DEFAULT_HEARTBEAT_MS);
  if (ms === undefined) return DEFAULT_HEARTBEAT_MS;
  if (ms >= 1_000 && ms <= 600_000) return ms;
  f.report(
    ["worker", "heartbeat"],
    "invalid_value",
    `"worker.heartbeat" must be between 1s and 10m (got ${quote(worker.heartbeat)}) - a run is retried on another worker after 3 missed heartbeats`,
  );
  return DEFAULT_HEARTBEAT_MS;
}

function readWorkspaces(f: ConfigFile, root: YamlMap): DaemonSettings["workspaces"] {
  const workspaces = child(f, root, "workspaces", []) ?? {};
  const path = ["workspaces"];
  checkKeys(f, workspaces, path, ["checkoutRetentionDays", "transcriptRetentionDays"]);
  const checkout =
    int(f, workspaces, "checkoutRetentionDays", path, { min: 1, max: 36_500 }) ??
    DEFAULT_CHECKOUT_RETENTION_DAYS;
  const explicit = int(f, workspaces, "transcriptRetentionDays", path, { min: 1, max: 36_500 });
  const transcript = explicit ?? DEFAULT_TRANSCRIPT_RETENTION_DAYS;
  if (transcript < checkout && explicit !== undefined) {
    f.report(
      [...path, "transcriptRetentionDays"],
      "value_clamped",
      `"workspaces.transcriptRetentionDays" (${transcript}) is below "workspaces.checkoutRetentionDays" (${checkout}) and is raised to ${checkout} - transcripts are kept at least as long as checkouts`,
      "warning",
    );
  }
  return { checkoutRetentionDays: checkout, transcriptRetentionDays: Math.max(transcript, checkout) };
}

/** True when the effective bind address is reachable from other machines. */
export function offLoopback(settings: Pick<DaemonSettings, "server">): boolean {
  return !isLoopbackHost(settings.server.host);
}
