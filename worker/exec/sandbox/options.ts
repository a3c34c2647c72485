import type Docker from "dockerode";
import type { PipelineSandbox, SandboxSettings } from "../../../shared/config/sandbox-types.ts";
import type { Logger } from "../../../shared/logger.ts";
import type { Workspace } from "../../../shared/workspace-layout.ts";
import { CONTAINER_HOME, CONTAINER_PATHS } from "./paths.ts";

/** What a run's sandbox is made from. */
export interface SandboxRequest {
  docker: Docker;
  settings: SandboxSettings;
  sandbox: PipelineSandbox;
  configDir: string;
  paths: Workspace;
  invocationId: string;
  /** an orchestrated task's own sandbox: the task's id, which its containers are labelled with */
  taskId?: string;
  workerId: string;
  logger: Logger;
  /** the worker's model gateway socket: absent, a container reaches the gateway only with `network: host` */
  gatewaySocket?: string;
}

/**
 * The labels the sweeper finds a worker's containers by, and the part of the run a container is
 * for. `svc.task` is on an orchestrated task's containers only: the task may run on another worker
 * than its invocation, so it is the task's row that says whether the container is still owned.
 */
export const LABELS = {
  invocation: "svc.invocation",
  task: "svc.task",
  worker: "svc.worker",
  role: "svc.role",
} as const;

/** The container's network: the pipeline's `sandbox.network`, else `sandboxes.network`. */
export function networkOf(request: Pick<SandboxRequest, "sandbox" | "settings">): string {
  return request.sandbox.network ?? request.settings.network;
}

/**
 * Whether the agent's container reaches the gateway (and svc) through the forwarder on its own
 * loopback (forwarder.ts: a container beside it, which alone mounts the gateway's socket): every
 * network but the host's, on which the worker's loopback is its own.
 */
export function throughForwarder(request: SandboxRequest): boolean {
  return request.gatewaySocket !== undefined && networkOf(request) !== "host";
}

/** Which of a run's two containers: its setup steps', or its agent's (docs/operations.md, "Sandboxed runs"). */
export type SandboxRole = "setup" | "agent";

/**
 * One container of the run: the worktree, RUN_DIR and SURFACE_DIR mounted (and the agent's own
 * folder in the agent's container only), an idle process under the engine's init, never root,
 * every capability dropped, a read-only root with sized tmpfs, and the run's limits.
 */
export function createOptions(
  request: SandboxRequest,
  role: SandboxRole,
  image: string,
  user: string,
): Docker.ContainerCreateOptions {
  const { settings, sandbox, paths, invocationId, taskId, workerId } = request;
  const binds = [
    `${paths.checkout}:${CONTAINER_PATHS.checkout}:rw`,
    `${paths.runDir}:${CONTAINER_PATHS.runDir}:rw`,
    `${paths.surfaceDir}:${CONTAINER_PATHS.surfaceDir}:rw`,
    ...(role === "agent" ? [`${paths.agentDir}:${CONTAINER_PATHS.agentDir}:rw`] : []),
    ...sandbox.mounts.map((mount) => `${mount.host}:${mount.container}:${mount.readOnly ? "ro" : "rw"}`),
  ];
  const { memoryBytes, cpus, pids, tmpfsBytes } = settings.limits;
  const tmpfs = `rw,nosuid,nodev,size=${tmpfsBytes},mode=1777`;
  return {
    Image: image,
    // an idle process keeps the container up; the run's processes are execs beside it
    Entrypoint: ["sleep"],
    Cmd: ["infinity"],
    User: user,
    WorkingDir: CONTAINER_PATHS.checkout,
    Labels: {
      [LABELS.invocation]: invocationId,
      ...(taskId ? { [LABELS.task]: taskId } : {}),
      [LABELS.worker]: workerId,
      [LABELS.role]: role,
    },
    HostConfig: {
      Binds: binds,
      NetworkMode: networkOf(request),
      CapDrop: ["ALL"],
      SecurityOpt: ["no-new-privileges"],
      ReadonlyRootfs: true,
      Tmpfs: { "/tmp": tmpfs, [CONTAINER_HOME]: tmpfs },
      Init: true,
      Memory: memoryBytes,
      MemorySwap: memoryBytes,
      NanoCpus: Math.round(cpus * 1e9),
      PidsLimit: pids,
    },
  };
}
