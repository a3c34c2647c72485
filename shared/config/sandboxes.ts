import { isAbsolute, normalize } from "node:path";
import { checkKeys, int, mapping, num, quote, str, strList, type YamlMap } from "./read.ts";
import type {
  EngineAddress,
  ImageVariant,
  PipelineSandbox,
  SandboxLimits,
  SandboxMount,
  SandboxSettings,
} from "./sandbox-types.ts";
import { secretSource } from "./secrets.ts";
import { type ConfigFile, formatPath, type KeyPath } from "./source.ts";

export const DEFAULT_ENGINE_SOCKET = "/var/run/docker.sock";
export const DEFAULT_SANDBOX_USER = "1000:1000";
export const DEFAULT_SANDBOX_IMAGE = "agent:default";
/**
 * What every sandbox container gets unless `sandboxes.limits` says otherwise: a run that forks
 * without end, fills memory or a tmpfs, or spins every core stops at these, not at the host's.
 */
export const DEFAULT_SANDBOX_LIMITS: Readonly<SandboxLimits> = {
  memoryBytes: 4 * 1024 ** 3,
  cpus: 2,
  pids: 1024,
  tmpfsBytes: 512 * 1024 ** 2,
};
/** The images `svc image pull` fetches from `sandboxes.registry`; every other one is a variant. */
export const DEFAULT_IMAGES = ["agent:default", "studio:default"] as const;

const SANDBOX_KEYS = [
  "engine",
  "registry",
  "registry_auth",
  "network",
  "mcp_url",
  "user",
  "limits",
  "images",
];
const IMAGE = /^(agent:default|studio:default|agent:([a-z0-9][a-z0-9._-]*))$/;
const VARIANT = /^[a-z0-9][a-z0-9._-]*$/;
const NETWORK = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;
const USER = /^\d+(:\d+)?$/;
const MEMORY = /^(\d+(?:\.\d+)?)\s*([kmg]?)b?$/i;
const MOUNT_MODES = ["ro", "rw"];
// the code-host CLIs keep their login here; sharing it would let a run act as the host's own account
const CODEHOST_CLI_DIRS = /(^|\/)\.config\/(gh|glab-cli|hub)(\/|$)|(^|\/)\.(gh|glab)(\/|$)/;

/** The engine svc talks to when `sandboxes.engine.socket` is not set: DOCKER_HOST, then the default socket. */
export function engineFromEnvironment(env: NodeJS.ProcessEnv): EngineAddress {
  const dockerHost = env.DOCKER_HOST?.trim();
  if (dockerHost?.startsWith("unix://")) return { socket: dockerHost.slice("unix://".length) };
  if (dockerHost?.startsWith("tcp://")) {
    const url = new URL(`http://${dockerHost.slice("tcp://".length)}`);
    return { host: url.hostname, port: Number(url.port || 2375) };
  }
  return { socket: DEFAULT_ENGINE_SOCKET };
}

/** The `sandboxes:` block of daemon.yaml; absent, every key has its default. */
export function readSandboxes(f: ConfigFile, root: YamlMap, env: NodeJS.ProcessEnv): SandboxSettings {
  const path = ["sandboxes"];
  const raw =
    root.sandboxes == null ? {} : (mapping(f, root.sandboxes, path, " such as { network: none }") ?? {});
  checkKeys(f, raw, path, SANDBOX_KEYS);
  const engineRaw = raw.engine == null ? {} : (mapping(f, raw.engine, [...path, "engine"]) ?? {});
  checkKeys(f, engineRaw, [...path, "engine"], ["socket"]);
  const socket = str(f, engineRaw, "socket", [...path, "engine"]);
  if (socket && !isAbsolute(socket))
    f.report(
      [...path, "engine", "socket"],
      "invalid_value",
      `"sandboxes.engine.socket" must be an absolute path such as /var/run/docker.sock (got ${quote(socket)})`,
    );
  const registry = str(f, raw, "registry", path);
  const user = str(f, raw, "user", path) ?? DEFAULT_SANDBOX_USER;
  if (!USER.test(user) || user.split(":")[0] === "0")
    f.report(
      [...path, "user"],
      "invalid_value",
      `"sandboxes.user" must be a numeric non-root <uid>:<gid> such as 1000:1000 (got ${quote(user)}) - a sandbox never runs as root`,
    );
  const mcpUrl = str(f, raw, "mcp_url", path);
  if (mcpUrl && !/^https?:\/\/[^/].*\/mcp$/.test(mcpUrl))
    f.report(
      [...path, "mcp_url"],
      "invalid_value",
      `"sandboxes.mcp_url" must be the http(s) URL of the daemon's /mcp endpoint as a container reaches it, such as http://svc-ingress:7420/mcp (got ${quote(mcpUrl)})`,
    );
  const registryAuth = readRegistryAuth(f, raw, path);
  return {
    engine: socket ? { socket } : engineFromEnvironment(env),
    ...(registry ? { registry: registry.replace(/\/+$/, "") } : {}),
    ...(registryAuth ? { registryAuth } : {}),
    network: readNetwork(f, raw, path) ?? "none",
    ...(mcpUrl ? { mcpUrl } : {}),
    user,
    limits: readLimits(f, raw, path),
    images: readVariants(f, raw, path),
  };
}

function readRegistryAuth(f: ConfigFile, raw: YamlMap, path: KeyPath): SandboxSettings["registryAuth"] {
  if (raw.registry_auth == null) return undefined;
  const authPath = [...path, "registry_auth"];
  const auth = mapping(
    f,
    raw.registry_auth,
    authPath,
    " such as { username, secret_ref: registry/password }",
  );
  if (!auth) return undefined;
  checkKeys(f, auth, authPath, ["username", "secret", "secret_ref"]);
  const username = str(f, auth, "username", authPath, { required: true });
  const secret = secretSource(f, auth, authPath, {
    expectedRef: "registry/password",
    howToStore: 'store the password as the secret "registry/password"',
  });
  return username && secret ? { username, secret } : undefined;
}

function readNetwork(f: ConfigFile, raw: YamlMap, path: KeyPath): string | undefined {
  const network = str(f, raw, "network", path);
  if (network === undefined || NETWORK.test(network)) return network;
  f.report(
    [...path, "network"],
    "invalid_value",
    `"${formatPath([...path, "network"])}" must be none, host or the name of an engine network (got ${quote(network)})`,
  );
  return undefined;
}

function readLimits(f: ConfigFile, raw: YamlMap, path: KeyPath): SandboxLimits {
  if (raw.limits == null) return { ...DEFAULT_SANDBOX_LIMITS };
  const limitsPath = [...path, "limits"];
  const limits = mapping(
    f,
    raw.limits,
    limitsPath,
    " such as { memory: 4g, cpus: 2, pids: 1024, tmpfs: 512m }",
  );
  if (!limits) return { ...DEFAULT_SANDBOX_LIMITS };
  checkKeys(f, limits, limitsPath, ["memory", "cpus", "pids", "tmpfs"]);
  const out: SandboxLimits = { ...DEFAULT_SANDBOX_LIMITS };
  for (const [key, field] of [
    ["memory", "memoryBytes"],
    ["tmpfs", "tmpfsBytes"],
  ] as const) {
    if (limits[key] == null) continue;
    const bytes = memoryBytes(limits[key]);
    if (bytes) out[field] = bytes;
    else
      f.report(
        [...limitsPath, key],
        "invalid_value",
        `"sandboxes.limits.${key}" must be a size of at least 6m such as 512m or 4g (got ${quote(limits[key])})`,
      );
  }
  const cpus = num(f, limits, "cpus", limitsPath, { min: 0.01, max: 1024 });
  if (cpus !== undefined) out.cpus = cpus;
  const pids = int(f, limits, "pids", limitsPath, { min: 16, max: 4_194_304 });
  if (pids !== undefined) out.pids = pids;
  return out;
}

function memoryBytes(value: unknown): number | undefined {
  const match = typeof value === "number" ? [String(value), String(value), ""] : MEMORY.exec(String(value));
  if (!match) return undefined;
  const unit = { "": 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 }[
    match[2]!.toLowerCase() as "" | "k" | "m" | "g"
  ];
  const bytes = Math.floor(Number(match[1]) * unit);
  // the engine refuses less than 6 MB
  return bytes >= 6 * 1024 ** 2 ? bytes : undefined;
}

function readVariants(f: ConfigFile, raw: YamlMap, path: KeyPath): Record<string, ImageVariant> {
  if (raw.images == null) return {};
  const imagesPath = [...path, "images"];
  const images = mapping(
    f,
    raw.images,
    imagesPath,
    " of variant name to { build: <dir> } or { pull: <reference> }",
  );
  const out: Record<string, ImageVariant> = {};
  for (const [name, value] of Object.entries(images ?? {})) {
    const variantPath = [...imagesPath, name];
    const spec = mapping(f, value, variantPath, " such as { build: images/python }");
    if (!spec) continue;
    checkKeys(f, spec, variantPath, ["build", "pull"]);
    if (!VARIANT.test(name) || name === "default") {
      f.report(
        variantPath,
        "invalid_value",
        `image variant name ${quote(name)} at "${formatPath(variantPath)}" must use lower-case letters, digits, ".", "_" and "-", and must not be "default"`,
      );
      continue;
    }
    const build = str(f, spec, "build", variantPath);
    const pull = str(f, spec, "pull", variantPath);
    if ((build === undefined) === (pull === undefined)) {
      f.report(
        variantPath,
        "invalid_value",
        `"${formatPath(variantPath)}" must set exactly one of "build" (a directory with a Dockerfile, relative to .svc/) and "pull" (an image reference)`,
      );
      continue;
    }
    if (build !== undefined && (isAbsolute(build) || normalize(build).startsWith(".."))) {
      f.report(
        [...variantPath, "build"],
        "invalid_value",
        `"${formatPath([...variantPath, "build"])}" must be a directory inside .svc/, written relative to it, e.g. images/${name} (got ${quote(build)})`,
      );
      continue;
    }
    out[name] = build !== undefined ? { name, build } : { name, pull: pull! };
  }
  return out;
}

/** A pipeline's `sandbox:` block, as far as the file alone can judge it (see checkSandboxReferences). */
export function readPipelineSandbox(
  f: ConfigFile,
  root: YamlMap,
  hasPrincipals: boolean,
): PipelineSandbox | undefined {
  if (root.sandbox == null) return undefined;
  const raw = mapping(f, root.sandbox, ["sandbox"], " such as { image: agent:default, mounts: [...] }");
  if (!raw) return undefined;
  checkKeys(f, raw, ["sandbox"], ["image", "mounts", "network"]);
  const image = str(f, raw, "image", ["sandbox"]) ?? DEFAULT_SANDBOX_IMAGE;
  if (!IMAGE.test(image))
    f.report(
      ["sandbox", "image"],
      "invalid_value",
      `"sandbox.image" must be agent:default, studio:default or agent:<variant> (got ${quote(image)})`,
    );
  const network = readNetwork(f, raw, ["sandbox"]);
  const mounts: SandboxMount[] = [];
  (strList(f, raw, "mounts", ["sandbox"]) ?? []).forEach((text, index) => {
    const mount = readMount(f, text, index, hasPrincipals);
    if (mount) mounts.push(mount);
  });
  return { image, mounts, ...(network ? { network } : {}) };
}

function readMount(
  f: ConfigFile,
  text: string,
  index: number,
  hasPrincipals: boolean,
): SandboxMount | undefined {
  const path = ["sandbox", "mounts", index];
  const where = `"sandbox.mounts[${index}]"`;
  const [host = "", container = "", mode, ...rest] = text.split(":");
  if (hasPrincipals && [host, container].some((side) => CODEHOST_CLI_DIRS.test(side.replace(/^~/, "")))) {
    f.report(
      path,
      "mount_refused",
      `${where} mounts a shared code-host CLI configuration directory, which is refused when "principals" are configured - remove the mount; the run acts through its principal`,
    );
    return undefined;
  }
  if (!host || !container || rest.length > 0 || (mode !== undefined && !MOUNT_MODES.includes(mode))) {
    f.report(
      path,
      "invalid_value",
      `${where} must be written <host path>:<container path>[:ro|rw], e.g. /srv/cache:/cache:ro (got ${quote(text)})`,
    );
    return undefined;
  }
  if (!isAbsolute(host)) {
    f.report(
      path,
      "invalid_value",
      `${where} has the relative host path ${quote(host)} - write the absolute path of the host directory, e.g. /srv/cache:${container}`,
    );
    return undefined;
  }
  if (!isAbsolute(container)) {
    f.report(
      path,
      "invalid_value",
      `${where} has the relative container path ${quote(container)} - write an absolute path inside the container, e.g. ${host}:/cache`,
    );
    return undefined;
  }
  return { host: withoutSlash(host), container: withoutSlash(container), readOnly: mode === "ro" };
}

function withoutSlash(path: string): string {
  const normal = normalize(path);
  return normal.length > 1 ? normal.replace(/\/+$/, "") : normal;
}

/**
 * `network: host` is refused while the loopback rule is on (`server.loopback_star`, absent = on):
 * a container in the host's network namespace connects to the ingress from 127.0.0.1 without a
 * forwarding header, exactly as the svc CLI does, so it would act as `*` without a token and could
 * fire unsandboxed pipelines, run host tools and trust notes. `path` is the key as written:
 * `sandboxes.network` of daemon.yaml, or a pipeline's `sandbox.network`.
 */
export function checkHostNetwork(
  f: ConfigFile,
  path: KeyPath,
  network: string | undefined,
  loopbackStar: boolean | undefined,
): void {
  if (network !== "host" || loopbackStar === false) return;
  const key = formatPath(path);
  f.report(
    path,
    "invalid_value",
    `"${key}: host" puts the sandbox in the host's network, where its requests reach the daemon from 127.0.0.1 and the loopback rule ("server.loopback_star", on by default) gives them "*" without a token - use ${key}: none (the default: the agent reaches its model and svc through the gateway's socket only) or the name of an engine network you created (docker network create svc-agents), or set "server.loopback_star: false" in daemon.yaml so that every caller needs a token`,
  );
}

/** What the pipeline's sandbox refers to in daemon.yaml: its image variant, and the engine's socket. */
export function checkSandboxReferences(
  f: ConfigFile,
  sandbox: PipelineSandbox,
  settings: SandboxSettings,
): void {
  const variant = IMAGE.exec(sandbox.image)?.[2];
  if (variant && !settings.images[variant]) {
    f.report(
      ["sandbox", "image"],
      "unknown_image_variant",
      `"sandbox.image" names the image variant ${quote(variant)}, which "sandboxes.images" of daemon.yaml does not define - add "sandboxes.images.${variant}: { build: <dir> }" or "{ pull: <reference> }", or use agent:default (defined: ${Object.keys(settings.images).join(", ") || "none"})`,
    );
  }
  const socket = "socket" in settings.engine ? normalize(settings.engine.socket) : undefined;
  const sockets = new Set([DEFAULT_ENGINE_SOCKET, "/run/docker.sock", "/run/podman/podman.sock", socket]);
  sandbox.mounts.forEach((mount, index) => {
    const exposed = [...sockets].find(
      (path) => path && (path === mount.host || path.startsWith(mount.host === "/" ? "/" : `${mount.host}/`)),
    );
    if (!exposed) return;
    f.report(
      ["sandbox", "mounts", index],
      "mount_refused",
      `"sandbox.mounts[${index}]" mounts the container engine's socket ${exposed} (or a directory holding it), which would hand the run control of the host - remove the mount`,
    );
  });
}
