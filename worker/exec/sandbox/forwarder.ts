import type { Duplex } from "node:stream";
import { Writable } from "node:stream";
import type Docker from "dockerode";
import { DEFAULT_SANDBOX_IMAGE } from "../../../shared/config/sandboxes.ts";
import { engineLabel, imageExists } from "../../../shared/sandbox/engine.ts";
import { LABELS, type SandboxRequest } from "./options.ts";
import type { NumericUser } from "./user.ts";

/** Where the worker's gateway socket (worker/gateway/gateway.ts) appears in the forwarder's container. */
export const CONTAINER_GATEWAY_SOCKET = "/svc/gateway.sock";
/**
 * The forwarder's port on the agent container's own loopback: the agent's model base URL and,
 * unless `sandboxes.mcp_url` names another way, its `SVC_DAEMON_URL` and `SVC_MCP_URL`. The
 * daemon's own default port, so the agent's view of svc looks like a local install's.
 */
export const CONTAINER_GATEWAY_URL = "http://127.0.0.1:7420";

/**
 * The forwarder's image: svc's own agent image, whatever the run's. Every worker host has it
 * already (`svc image pull`, the default `sandbox.image`), with the Node 24 the script below is
 * written for, so nothing new is built, published or pulled; a run from agent:default shares its
 * layers.
 */
export const FORWARDER_IMAGE = DEFAULT_SANDBOX_IMAGE;
/** On a forwarder's container: the id of the agent container it serves (the sweeper's key, sweep.ts). */
export const FORWARDER_LABEL = "svc.forwarder";

/** How long the forwarder may take to listen: a container's and a node's start, which a loaded host can slow. */
const READY_MS = 20_000;
/** The most of the forwarder's stderr kept to say why it did not start. */
const STDERR_KEPT = 2_000;
/** A byte pipe needs little: these bound it whatever the run's limits are. */
const MEMORY_BYTES = 256 * 1024 ** 2;
const PIDS = 64;

/**
 * The forwarder (`node -e`, then the socket and the port): every connection to the agent
 * container's 127.0.0.1:<port> is piped to the mounted socket, byte for byte. It knows nothing of
 * HTTP or tokens: the gateway behind the socket decides what goes on, and where. Exported for
 * bench/sandbox.bench.ts, which also runs it the way svc once did, inside the agent's container.
 */
export const FORWARDER = `
const net = require("node:net");
const [socket, port] = process.argv.slice(1);
const server = net.createServer({ noDelay: true }, (inside) => {
  const outside = net.connect(socket);
  inside.pipe(outside);
  outside.pipe(inside);
  inside.on("error", () => outside.destroy());
  outside.on("error", () => inside.destroy());
  inside.on("close", () => outside.destroy());
  outside.on("close", () => inside.destroy());
});
server.on("error", (error) => { console.error(error.message); process.exit(1); });
server.listen(Number(port), "127.0.0.1", () => console.log("ready"));
`;

/** The forwarder's image is not on the engine: the run fails `sandbox_image_missing`, naming the fix. */
export class ForwarderImageMissing extends Error {}

/**
 * The forwarder's container, beside a started agent container: it joins the agent's network
 * namespace (so it listens on the agent's own loopback, and the run's image needs nothing) and its
 * PID namespace, so the kernel kills it with the agent container's init, whoever removes that
 * container and even if the worker is gone. It alone mounts the gateway's socket. The agent's user
 * and confinement: no capability, a read-only root, no new privileges.
 */
export function forwarderOptions(
  request: SandboxRequest,
  agent: Docker.Container,
  owner: NumericUser,
): Docker.ContainerCreateOptions {
  const port = new URL(CONTAINER_GATEWAY_URL).port;
  return {
    Image: FORWARDER_IMAGE,
    Entrypoint: ["node"],
    Cmd: ["-e", FORWARDER, CONTAINER_GATEWAY_SOCKET, port],
    // numeric: the agent's user may be a name only the run's image knows
    User: `${owner.uid}:${owner.gid}`,
    WorkingDir: "/",
    // not svc.invocation: the run's containers are its setup's and its agent's; this one belongs
    // to the agent's container and is judged by it
    Labels: { [FORWARDER_LABEL]: agent.id, [LABELS.worker]: request.workerId },
    AttachStdout: true,
    AttachStderr: true,
    HostConfig: {
      Binds: [`${request.gatewaySocket}:${CONTAINER_GATEWAY_SOCKET}:ro`],
      NetworkMode: `container:${agent.id}`,
      PidMode: `container:${agent.id}`,
      CapDrop: ["ALL"],
      SecurityOpt: ["no-new-privileges"],
      ReadonlyRootfs: true,
      // killed with the agent's PID namespace, the engine removes it even when no worker does
      AutoRemove: true,
      Memory: MEMORY_BYTES,
      MemorySwap: MEMORY_BYTES,
      NanoCpus: Math.round(request.settings.limits.cpus * 1e9),
      PidsLimit: PIDS,
    },
  };
}

/**
 * Creates and starts the forwarder beside a started agent container and resolves once it listens;
 * `created` is told of its container first, so the caller removes it with the agent's whatever
 * happens next. Throws ForwarderImageMissing without the image, and an Error with the
 * forwarder's own words when it does not listen.
 */
export async function startForwarder(
  request: SandboxRequest,
  agent: Docker.Container,
  owner: NumericUser,
  created: (forwarder: Docker.Container) => void,
): Promise<void> {
  const { docker, settings } = request;
  if (!(await imageExists(docker, FORWARDER_IMAGE))) {
    const fix = settings.registry
      ? "run `svc image pull` on this host"
      : 'set "sandboxes.registry" in daemon.yaml and run `svc image pull` on this host, or build it from deploy/images/agent and tag it';
    throw new ForwarderImageMissing(
      `the model gateway's forwarder runs in svc's image ${FORWARDER_IMAGE} beside the agent's container, and ${FORWARDER_IMAGE} is not on the container engine at ${engineLabel(settings.engine)} - ${fix}`,
    );
  }
  const forwarder = await docker.createContainer(forwarderOptions(request, agent, owner));
  created(forwarder);
  // attached before it starts: its "ready", or why it exited, is never missed (and never needs
  // the engine's log driver)
  // the engine's hijacked connection: a socket, which is destroyed once it told what it had to
  const stream = (await forwarder.attach({ stream: true, stdout: true, stderr: true })) as Duplex;
  let stderr = "";
  const ready = new Promise<void>((resolve, reject) => {
    let stdout = "";
    let settled = false;
    const settle = (why?: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      // it prints nothing more once it listens; its stderr is the engine's from here on
      stream.destroy();
      if (why === undefined) return resolve();
      const said = stderr.trim() ? `: ${stderr.trim()}` : "";
      reject(new Error(`the model gateway's forwarder did not start beside the container (${why}${said})`));
    };
    const timer = setTimeout(() => settle(`it did not listen within ${READY_MS / 1000} s`), READY_MS);
    const out = new Writable({
      write(chunk: Buffer, _encoding, done) {
        stdout += chunk.toString("utf8");
        if (stdout.includes("ready\n")) settle();
        done();
      },
    });
    const err = new Writable({
      write(chunk: Buffer, _encoding, done) {
        if (stderr.length < STDERR_KEPT) stderr += chunk.toString("utf8").slice(0, STDERR_KEPT);
        done();
      },
    });
    forwarder.modem.demuxStream(stream, out, err);
    stream.once("end", () => settle("it exited"));
    stream.once("close", () => settle("it exited"));
    // a stream cut by the container's removal: the run is ending anyway
    stream.once("error", (error: Error) => settle(error.message));
  });
  // a start the engine refuses ends the attach too: that error, not "it exited", says why
  ready.catch(() => {});
  try {
    await forwarder.start();
  } catch (error) {
    stream.destroy();
    throw error;
  }
  await ready;
}
