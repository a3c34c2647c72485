import type { SecretSource } from "./secret-source.ts";

/** One `sandbox.mounts` entry, `<host>:<container>[:ro|rw]`, both paths absolute. */
export interface SandboxMount {
  host: string;
  container: string;
  readOnly: boolean;
}

export interface PipelineSandbox {
  /** `agent:default`, `studio:default` or `agent:<variant>` */
  image: string;
  mounts: SandboxMount[];
  /** overrides `sandboxes.network` */
  network?: string;
}

/** How to reach the container engine: a unix socket, or DOCKER_HOST's tcp address. */
export type EngineAddress = { socket: string } | { host: string; port: number };

/** A `sandboxes.images` variant, made on the host that first needs it. */
export type ImageVariant = { name: string; build: string } | { name: string; pull: string };

/** What one sandbox container may use; `tmpfsBytes` is the size of each of its tmpfs mounts (`/tmp`, HOME). */
export interface SandboxLimits {
  memoryBytes: number;
  cpus: number;
  pids: number;
  tmpfsBytes: number;
}

/** The `sandboxes:` block of daemon.yaml, defaults filled in. */
export interface SandboxSettings {
  engine: EngineAddress;
  /** where `svc image pull` gets agent:default and studio:default */
  registry?: string;
  registryAuth?: { username: string; secret: SecretSource };
  /** none | host | an engine network name */
  network: string;
  /** how a container reaches the daemon's tool protocol; absent: the server URL */
  mcpUrl?: string;
  /** `<uid>:<gid>` when the image names no non-root USER */
  user: string;
  /** every container's limits: the defaults (DEFAULT_SANDBOX_LIMITS) unless `sandboxes.limits` sets them */
  limits: SandboxLimits;
  /** variant name (the `<variant>` of `agent:<variant>`) to how it is made */
  images: Record<string, ImageVariant>;
}
