import type Docker from "dockerode";
import { type Diagnostic, diagnostic } from "../../../shared/diagnostics.ts";
import {
  engineLabel,
  engineStatus,
  engineUnreachableMessage,
  imageExists,
  isEngineUnreachable,
} from "../../../shared/sandbox/engine.ts";
import { ensureVariant, variantOf } from "../../../shared/sandbox/images.ts";
import { type ContainerSource, SandboxEngine, type SandboxLog } from "./container.ts";
import { CONTAINER_GATEWAY_URL, ForwarderImageMissing, startForwarder } from "./forwarder.ts";
import { handOver } from "./handover.ts";
import { createOptions, type SandboxRequest, type SandboxRole, throughForwarder } from "./options.ts";
import { containerUser, type NumericUser } from "./user.ts";

/** How long a removal refused as already under way waits for that one to end. */
const REMOVAL_WAIT_MS = 30_000;

/**
 * A sandboxed run's two containers, from one image: the setup steps' and the agent's, each the
 * process engine of its phase (`setup`, `agent`). The agent's container is made and started while
 * setup runs, idle, and gets its first process only once the setup container has stopped, with
 * every process a step left behind (its removal goes on beside the agent); only it mounts the agent's folder (its run token, its HOME, its
 * result file). The run's folders are handed to the container's user before either starts, and
 * the agent's folder again before each agent process, never by path (handover.ts).
 */
export class RunSandbox implements ContainerSource {
  readonly setup: SandboxEngine;
  readonly agent: SandboxEngine;
  readonly #request: SandboxRequest;
  #image: Promise<string | undefined> | undefined;
  #user: Promise<string> | undefined;
  #owner: NumericUser | undefined;
  #handedOver = false;
  readonly #readies = new Map<SandboxRole, Promise<Docker.Container | undefined>>();
  readonly #created = new Map<SandboxRole, Docker.Container>();
  readonly #removals = new Map<SandboxRole, Promise<void>>();
  readonly #stops = new Map<SandboxRole, Promise<void>>();
  /** the agent's forwarder to the gateway (forwarder.ts), removed with the agent's container */
  #forwarder: Docker.Container | undefined;
  /** why a container could not be made or started: the run's diagnostic */
  #failure: Diagnostic | undefined;

  constructor(request: SandboxRequest) {
    this.#request = request;
    this.setup = new SandboxEngine(this, "setup", request.paths);
    this.agent = new SandboxEngine(this, "agent", request.paths);
  }

  failure(): Diagnostic | undefined {
    return this.#failure;
  }

  /**
   * The daemon as the agent reaches it: at sandboxes.mcp_url when the operator named a way through
   * the container's network, else through the forwarder to the gateway's socket (which passes on
   * to the daemon), else (network host) at the worker's own address.
   */
  daemonUrl(workerUrl: string | undefined): string | undefined {
    const { mcpUrl } = this.#request.settings;
    if (mcpUrl) return mcpUrl.replace(/\/mcp$/, "");
    return throughForwarder(this.#request) ? CONTAINER_GATEWAY_URL : workerUrl;
  }

  /** The model gateway as the agent reaches it: the forwarder, or with `network: host` the worker's loopback. */
  modelGatewayUrl(workerUrl: string): string {
    return throughForwarder(this.#request) ? CONTAINER_GATEWAY_URL : workerUrl;
  }

  removed(role: SandboxRole): boolean {
    return this.#removals.has(role);
  }

  /**
   * The role's container, started; undefined (with `failure`) when it could not be. The agent's is
   * made and started beside the setup steps (with no process of the run in it: it mounts nothing
   * they can write but what they share with it), and handed its first process only once the setup
   * container has stopped, so nothing a step started is alive.
   */
  async start(role: SandboxRole, log: SandboxLog): Promise<Docker.Container | undefined> {
    if (this.removed(role)) return undefined;
    const { settings, sandbox } = this.#request;
    try {
      if (role === "agent") await this.#stopped("setup");
      const container = await this.#ready(role, log);
      if (!container) return undefined;
      const image = await this.#image;
      await log(
        `started ${image} as container ${container.id.slice(0, 12)} on ${engineLabel(settings.engine)}`,
      );
      return container;
    } catch (error) {
      if (isEngineUnreachable(error)) {
        this.#failure = diagnostic(
          "sandbox_engine_unreachable",
          engineUnreachableMessage(settings.engine, error),
        );
      } else if (error instanceof ForwarderImageMissing) {
        this.#failure = diagnostic("sandbox_image_missing", error.message);
      } else {
        const message = `starting the sandbox container from ${sandbox.image} failed: ${(error as Error).message}`;
        this.#failure = diagnostic("sandbox_start_failed", message);
      }
      await log(this.#failure.message).catch(() => {});
      return undefined;
    }
  }

  /**
   * The role's container made, its folders handed to its user while none of its processes runs,
   * and started; once per role. The first to need the image makes it, with its progress in `log`.
   */
  #ready(role: SandboxRole, log: SandboxLog): Promise<Docker.Container | undefined> {
    let ready = this.#readies.get(role);
    if (ready) return ready;
    ready = (async () => {
      this.#image ??= this.#makeImage(log);
      const image = await this.#image;
      if (!image) return undefined;
      this.#user ??= this.#userOf(image);
      const user = await this.#user;
      const container = await this.#request.docker.createContainer(
        createOptions(this.#request, role, image, user),
      );
      this.#created.set(role, container);
      try {
        return await this.#bringUp(role, container, user, log);
      } catch (error) {
        // a container that never became the run's is removed now: nothing else of the run uses it,
        // and it would otherwise wait for the run's end, or a sweeper pass if the worker died (a
        // remove() under way meanwhile waits for this promise, then finds it gone)
        await this.#discard(role, container);
        throw error;
      }
    })();
    this.#readies.set(role, ready);
    return ready;
  }

  /** A created container's user checked, the run's folders handed to it, and the container started. */
  async #bringUp(
    role: SandboxRole,
    container: Docker.Container,
    user: string,
    log: SandboxLog,
  ): Promise<Docker.Container | undefined> {
    const { paths } = this.#request;
    this.#owner ??= await containerUser(container, user);
    // before the first container starts: no process of the run is alive yet
    if (!this.#handedOver) {
      for (const dir of [paths.checkout, paths.runDir, paths.surfaceDir]) handOver(dir, this.#owner);
      this.#handedOver = true;
    }
    // the agent's container is made and started beside the setup container's start and steps, so
    // the agent waits for little more than the setup container's stop; an error in making it
    // comes back when the agent starts
    if (role === "setup") this.#ready("agent", log).catch(() => {});
    // no setup container mounts the agent's folder
    if (role === "agent") handOver(paths.agentDir, this.#owner);
    if (this.removed(role)) return undefined;
    await container.start();
    // before the agent's first process: its model and svc are behind the forwarder, a container
    // of svc's own beside it, so the run's image needs nothing of svc's
    if (role === "agent" && throughForwarder(this.#request))
      await startForwarder(this.#request, container, this.#owner, (forwarder) => {
        this.#forwarder = forwarder;
      });
    return container;
  }

  /** Before each agent process: what the worker wrote for it (its token file, a fresh HOME) becomes the container user's. */
  handOverAgentFiles(): void {
    if (this.#owner) handOver(this.#request.paths.agentDir, this.#owner);
  }

  /**
   * Every process of the role's container gone: the container killed (SIGKILL to its init ends its
   * whole PID namespace) and stopped; its removal may still be under way beside what comes next.
   * Throws when the engine cannot say the container stopped (the agent's then does not start).
   */
  #stopped(role: SandboxRole): Promise<void> {
    let stop = this.#stops.get(role);
    if (stop) return stop;
    const gone = (error: unknown) => {
      // 404: removed already; 409: not running (never started, or stopped already)
      if (engineStatus(error) !== 404 && engineStatus(error) !== 409) throw error;
    };
    stop = (async () => {
      // a container still being made is stopped once it exists
      await this.#readies.get(role)?.catch(() => undefined);
      const container = this.#created.get(role);
      if (!container) return;
      await container.kill().catch(gone);
      const state = await container.inspect().then(
        (info) => info.State,
        (error) => gone(error),
      );
      if (state?.Running) await container.wait({ condition: "not-running" }).catch(gone);
    })();
    this.#stops.set(role, stop);
    return stop;
  }

  /**
   * Removes the role's container (force: every process in it is killed first); every call waits
   * for the one removal. A removal the engine refuses is logged and left to the sweeper, which
   * finds the container by its labels.
   */
  remove(role: SandboxRole): Promise<void> {
    let removal = this.#removals.get(role);
    if (removal) return removal;
    removal = (async () => {
      // a container still being made or started is removed once it is
      await this.#readies.get(role)?.catch(() => undefined);
      const container = this.#created.get(role);
      if (container) await this.#discard(role, container);
    })();
    this.#removals.set(role, removal);
    return removal;
  }

  /**
   * Removes one container (force: every process in it is killed first), and the agent's with its
   * forwarder; never rejects. A removal the engine refuses is logged and left to the sweeper, which
   * finds the container by its labels.
   */
  async #discard(role: SandboxRole, container: Docker.Container): Promise<void> {
    const forwarder = role === "agent" ? this.#forwarder : undefined;
    // the forwarder dies with the agent's PID namespace anyway; removed here too, so the run's end
    // means both containers are gone
    await Promise.all([
      this.#removeContainer(role, container),
      forwarder && this.#removeContainer("forwarder", forwarder),
    ]);
  }

  #removeContainer(role: SandboxRole | "forwarder", container: Docker.Container): Promise<void> {
    return container.remove({ force: true, v: true }).catch(async (error) => {
      if (engineStatus(error) === 404) return; // already gone
      // the engine runs one removal of a container at a time and refuses the next: this one is
      // done when that one is, and the caller may count on the container being gone (a removal
      // that never ends is left to the sweeper like a refused one)
      if (engineStatus(error) === 409 && /already in progress/.test((error as Error).message)) {
        const abortSignal = AbortSignal.timeout(REMOVAL_WAIT_MS);
        const gone = await container.wait({ condition: "removed", abortSignal }).then(
          () => true,
          (waitError) => engineStatus(waitError) === 404,
        );
        if (gone) return;
      }
      this.#request.logger.warn("removing the sandbox container failed; the sweeper removes it later", {
        event: "sandbox.remove_failed",
        invocation: this.#request.invocationId,
        ...(this.#request.taskId ? { task: this.#request.taskId } : {}),
        role,
        error: (error as Error).message,
      });
    });
  }

  /** The image, made first if it is a variant this host lacks; undefined (with `failure`) when it is missing. */
  async #makeImage(log: SandboxLog): Promise<string | undefined> {
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
  async #userOf(image: string): Promise<string> {
    const info = await this.#request.docker.getImage(image).inspect();
    const own = info.Config?.User?.trim() ?? "";
    const name = own.split(":")[0];
    return own && name !== "root" && name !== "0" ? own : this.#request.settings.user;
  }
}
