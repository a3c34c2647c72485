import { Writable } from "node:stream";
import type Docker from "dockerode";
import { CONTAINER_HOME, CONTAINER_PATH } from "./paths.ts";

/** Where the worker's gateway socket (worker/gateway/gateway.ts) appears in an agent container. */
export const CONTAINER_GATEWAY_SOCKET = "/svc/gateway.sock";
/**
 * The forwarder's port on the container's own loopback: the agent's model base URL and, unless
 * `sandboxes.mcp_url` names another way, its `SVC_DAEMON_URL` and `SVC_MCP_URL`. The daemon's own
 * default port, so the agent's view of svc looks like a local install's.
 */
export const CONTAINER_GATEWAY_URL = "http://127.0.0.1:7420";

/** How long the forwarder may take to listen: a node start, which a loaded host can slow. */
const READY_MS = 20_000;
/** The most of the forwarder's stderr kept to say why it did not start. */
const STDERR_KEPT = 2_000;

/**
 * The forwarder, run by the image's `node` as the container's user: every connection to the
 * container's 127.0.0.1:<port> is piped to the mounted socket, byte for byte. It knows nothing of
 * HTTP or tokens: the gateway behind the socket decides what goes on, and where.
 */
const FORWARDER = `
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

/**
 * Starts the forwarder in a started agent container and resolves once it listens. It lives as long
 * as the container: its removal ends it with every other process. Throws, naming the fix, when it
 * cannot start (an image without `node`).
 */
export async function startForwarder(container: Docker.Container): Promise<void> {
  const port = new URL(CONTAINER_GATEWAY_URL).port;
  const exec = await container.exec({
    Cmd: ["node", "-e", FORWARDER, CONTAINER_GATEWAY_SOCKET, port],
    Env: [`PATH=${CONTAINER_PATH}`, `HOME=${CONTAINER_HOME}`],
    AttachStdout: true,
    AttachStderr: true,
    Tty: false,
  });
  const stream = await exec.start({ hijack: true, stdin: false });
  let stderr = "";
  const ready = new Promise<void>((resolve, reject) => {
    let stdout = "";
    let listening = false;
    const timer = setTimeout(() => fail(`it did not listen within ${READY_MS / 1000} s`), READY_MS);
    const fail = (why: string) => {
      clearTimeout(timer);
      const said = stderr.trim() ? `: ${stderr.trim()}` : "";
      reject(
        new Error(
          `the model gateway's forwarder did not start in the container (${why}${said}); a sandbox ` +
            "whose network is not host reaches its model and svc through it, with the image's node: " +
            "use an image with node on its PATH (agent:default has it), or set the sandbox's network to host",
        ),
      );
    };
    const out = new Writable({
      write(chunk: Buffer, _encoding, done) {
        // kept only until the forwarder said it listens: it prints nothing else for the container's life
        if (!listening) {
          stdout += chunk.toString("utf8");
          listening = stdout.includes("ready\n");
          if (listening) {
            clearTimeout(timer);
            resolve();
          }
        }
        done();
      },
    });
    const err = new Writable({
      write(chunk: Buffer, _encoding, done) {
        if (stderr.length < STDERR_KEPT) stderr += chunk.toString("utf8").slice(0, STDERR_KEPT);
        done();
      },
    });
    container.modem.demuxStream(stream, out, err);
    stream.once("end", () => fail("it exited"));
    stream.once("close", () => fail("it exited"));
    // a stream cut by the container's removal: the run is ending anyway
    stream.once("error", (error: Error) => fail(error.message));
  });
  await ready;
}
