import { appendFile, chmod, lchown, readdir } from "node:fs/promises";
import { join } from "node:path";
import type Docker from "dockerode";
import type { PipelineSandbox, SandboxSettings } from "../../../shared/config/types.ts";
import { type Diagnostic, diagnostic } from "../../../shared/diagnostics.ts";
import type { Logger } from "../../../shared/logger.ts";
import {
  engineLabel,
  engineStatus,
  engineUnreachableMessage,
  imageExists,
  isEngineUnreachable,
} from "../../../shared/sandbox/engine.ts";
import { ensureVariant, variantOf } from "../../../shared/sandbox/images.ts";
import type { Workspace } from "../../../shared/workspace-layout.ts";
import type { ProcessEngine } from "../engine.ts";
import { type ProcessOutcome, type ProcessSpec, superviseChild } from "../process.ts";
import { execInContainer } from "./exec.ts";
import {
  CONTAINER_HOME,
  CONTAINER_PATHS,
  containerEnvironment,
  inContainer,
  type PathMap,
  pathMap,
} from "./paths.ts";

/** The labels the sweeper finds a worker's containers by. */
export const LABELS = { invocation: "svc.invocation", worker: "svc.worker" } as const;

export interface SandboxRequest {
  docker: Docker;
  settings: SandboxSettings;
  sandbox: PipelineSandbox;
  configDir: string;
  paths: Workspace;
  invocationId: string;
  workerId: string;
  logger: Logger;
}

/**
 * One run's container as its process engine: started when the run first needs it (its first setup
 * step or its agent) and removed when the run ends, times out or is cancelled. Every process of the
 * run is an exec inside it, never a host process, even once the container is gone (then the process
 * fails to start).
 */
export class SandboxEngine implements ProcessEngine {
  readonly #request: SandboxRequest;
  readonly #map: PathMap;
  #container: Docker.Container | undefined;
  #starting: Promise<Docker.Container | undefined> | undefined;
  #removed = false;
  #removal: Promise<void> | undefined;
  /** the log the container's start was written to */
  #startLog: string | undefined;
  #uid: { uid: number; gid: number } | undefined;
  /** why the container could not be started: the run's diagnostic */
  #failure: Diagnostic | undefined;

  constructor(request: SandboxRequest) {
    this.#request = request;
    this.#map = pathMap(request.paths);
  }

  failure(): Diagnostic | undefined {
    return this.#failure;
  }

  /** The agent reaches the daemon at sandboxes.mcp_url: the worker's own address may mean nothing inside. */
  daemonUrl(workerUrl: string | undefined): string | undefined {
    const { mcpUrl } = this.#request.settings;
    return mcpUrl ? mcpUrl.replace(/\/mcp$/, "") : workerUrl;
  }

  run(spec: ProcessSpec): Promise<ProcessOutcome> {
    // the container's start is part of the step: what waits for the step's start goes ahead now
    spec.onStarted?.();
    let stop = false;
    const exited = (async () => {
      const container = await this.#start(spec.logFile, spec.truncate === true);
      if (!container || stop) {
        const why = this.#failure?.message ?? "the run's sandbox container was removed";
        return { exitCode: null, signal: null, stdout: "", spawnError: why };
      }
      // the runtimes write files for the process (a private HOME, the MCP configuration) just before it starts
      await this.#giveToUser(this.#request.paths.runDir);
      return execInContainer(this.#request.docker, container, {
        ...spec,
        // the container's start is logged at the top of the first process's log: kept, not truncated
        truncate: spec.truncate === true && spec.logFile !== this.#startLog,
        argv: spec.argv.map((arg) => inContainer(arg, this.#map)),
        cwd: inContainer(spec.cwd, this.#map),
        env: containerEnvironment(spec.env, this.#map),
      });
    })();
    return superviseChild(spec, exited, () => {
      stop = true;
      // the run's end awaits the same removal
      void this.close();
    }).outcome;
  }

  /**
   * Stops and removes the container; every call waits for the one removal, so nothing of it is left
   * after. A removal the engine refuses is logged and left to the sweeper, which finds the container
   * by its labels.
   */
  close(): Promise<void> {
    this.#removed = true;
    this.#removal ??= (async () => {
      // a container still being created is removed once it exists
      await this.#starting;
      const container = this.#container;
      if (!container) return;
      await container.remove({ force: true, v: true });
    })().catch((error) => {
      if (engineStatus(error) === 404) return; // already gone
      this.#request.logger.warn("removing the sandbox container failed; the sweeper removes it later", {
        event: "sandbox.remove_failed",
        invocation: this.#request.invocationId,
        error: (error as Error).message,
      });
    });
    return this.#removal;
  }

  #start(logFile: string, truncate: boolean): Promise<Docker.Container | undefined> {
    if (this.#removed) return Promise.resolve(undefined);
    if (this.#starting) return this.#starting;
    this.#startLog = logFile;
    // one line after another, progress lines included, and all of them before the step's own output;
    // the first one starts a log the process would have started empty
    let written = Promise.resolve();
    let flag = truncate ? "w" : "a";
    const log = (line: string) => {
      const text = `# sandbox: ${line}\n`;
      const mode = flag;
      flag = "a";
      // a log line that cannot be written is lost; the run goes on
      written = written.then(() => appendFile(logFile, text, { flag: mode })).catch(() => {});
      return written;
    };
    this.#starting = this.#create(log).then((container) => {
      this.#container = container;
      return this.#removed ? undefined : container;
    });
    return this.#starting;
  }

  async #create(log: (line: string) => Promise<void>): Promise<Docker.Container | undefined> {
    const { docker, settings, sandbox } = this.#request;
    try {
      const image = await this.#image(log);
      if (!image) return undefined;
      const user = await this.#user(image);
      const container = await docker.createContainer(this.#createOptions(image, user));
      await container.start();
      await log(
        `started ${image} as container ${container.id.slice(0, 12)} on ${engineLabel(settings.engine)}`,
      );
      this.#uid = await this.#numericUser(container);
      for (const dir of [this.#request.paths.checkout, this.#request.paths.surfaceDir])
        await this.#giveToUser(dir);
      return container;
    } catch (error) {
      if (isEngineUnreachable(error)) {
        this.#failure = diagnostic(
          "sandbox_engine_unreachable",
          engineUnreachableMessage(settings.engine, error),
        );
      } else {
        const message = `starting the sandbox container from ${sandbox.image} failed: ${(error as Error).message}`;
        this.#failure = diagnostic("sandbox_start_failed", message);
      }
      await log(this.#failure.message).catch(() => {});
      return undefined;
    }
  }

  /** The image, made first if it is a variant this host lacks; undefined (with `failure`) when it is missing. */
  async #image(log: (line: string) => Promise<void>): Promise<string | undefined> {
    const { docker, settings, sandbox, configDir } = this.#request;
    const variant = variantOf(sandbox.image);
    const spec = variant ? settings.images[variant] : undefined;
    if (spec) {
      try {
        await ensureVariant(docker, configDir, spec, (line) => void log(line));
      } catch (error) {
        if (isEngineUnreachable(error)) throw error;
        const how =
          "build" in spec ? `fix the Dockerfile in .svc/${spec.build}` : `check the reference ${spec.pull}`;
        const message = `making the sandbox image ${sandbox.image} failed: ${(error as Error).message} - ${how}; the run's log holds the progress`;
        this.#failure = diagnostic("sandbox_image_missing", message, { field: "sandbox.image" });
        return undefined;
      }
    } else if (!(await imageExists(docker, sandbox.image))) {
      const fix = settings.registry
        ? "run `svc image pull` on this host (it fetches agent:default and studio:default from sandboxes.registry)"
        : 'set "sandboxes.registry" in daemon.yaml and run `svc image pull` on this host, or build the image from deploy/images and tag it';
      this.#failure = diagnostic(
        "sandbox_image_missing",
        `the sandbox image ${sandbox.image} is not on the container engine at ${engineLabel(settings.engine)} - ${fix}`,
        { field: "sandbox.image" },
      );
      return undefined;
    }
    return sandbox.image;
  }

  /** The image's own USER when it is not root, else `sandboxes.user`: never root inside. */
  async #user(image: string): Promise<string> {
    const info = await this.#request.docker.getImage(image).inspect();
    const own = info.Config?.User?.trim() ?? "";
    const name = own.split(":")[0];
    return own && name !== "root" && name !== "0" ? own : this.#request.settings.user;
  }

  #createOptions(image: string, user: string): Docker.ContainerCreateOptions {
    const { settings, sandbox, paths, invocationId, workerId } = this.#request;
    const binds = [
      `${paths.checkout}:${CONTAINER_PATHS.checkout}:rw`,
      `${paths.runDir}:${CONTAINER_PATHS.runDir}:rw`,
      `${paths.surfaceDir}:${CONTAINER_PATHS.surfaceDir}:rw`,
      ...sandbox.mounts.map((mount) => `${mount.host}:${mount.container}:${mount.readOnly ? "ro" : "rw"}`),
    ];
    const { memoryBytes, cpus, pids } = settings.limits;
    return {
      Image: image,
      // an idle process keeps the container up; the run's steps are execs beside it
      Entrypoint: ["sleep"],
      Cmd: ["infinity"],
      User: user,
      WorkingDir: CONTAINER_PATHS.checkout,
      Labels: { [LABELS.invocation]: invocationId, [LABELS.worker]: workerId },
      HostConfig: {
        Binds: binds,
        NetworkMode: sandbox.network ?? settings.network,
        CapDrop: ["ALL"],
        SecurityOpt: ["no-new-privileges"],
        ReadonlyRootfs: true,
        Tmpfs: { "/tmp": "rw,nosuid,nodev,mode=1777", [CONTAINER_HOME]: "rw,nosuid,nodev,mode=1777" },
        Init: true,
        ...(memoryBytes ? { Memory: memoryBytes, MemorySwap: memoryBytes } : {}),
        ...(cpus ? { NanoCpus: Math.round(cpus * 1e9) } : {}),
        ...(pids ? { PidsLimit: pids } : {}),
      },
    };
  }

  /** The uid and gid the container's processes run as (the image's USER may be a name). */
  async #numericUser(container: Docker.Container): Promise<{ uid: number; gid: number }> {
    const exit = await execInContainer(this.#request.docker, container, {
      argv: ["/bin/sh", "-c", 'echo "$(id -u) $(id -g)"'],
      cwd: "/",
      env: { PATH: "/usr/bin:/bin" },
      logFile: "/dev/null",
      captureStdout: true,
    });
    const [uid, gid] = exit.stdout.trim().split(" ").map(Number);
    if (exit.exitCode !== 0 || !Number.isInteger(uid) || !Number.isInteger(gid) || uid === 0)
      throw new Error(
        `the container's user is not a non-root user (id printed ${JSON.stringify(exit.stdout.trim())})`,
      );
    return { uid: uid!, gid: gid! };
  }

  /**
   * Makes a run directory the container user's. A worker that may not change owners (not root)
   * opens the tree to every user instead: the workspace directory above it is the worker's own.
   */
  async #giveToUser(dir: string): Promise<void> {
    if (!this.#uid) return;
    const { uid, gid } = this.#uid;
    const entries = await readdir(dir, { recursive: true, withFileTypes: true });
    const paths = [
      { path: dir, link: false },
      ...entries.map((entry) => ({ path: join(entry.parentPath, entry.name), link: entry.isSymbolicLink() })),
    ];
    for (const { path, link } of paths) {
      try {
        await lchown(path, uid, gid);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EPERM") throw error;
        // a link's mode is its target's: opening it could reach outside the run
        if (!link) await chmod(path, 0o777);
      }
    }
  }
}
