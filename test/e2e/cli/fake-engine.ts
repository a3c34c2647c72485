import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { join } from "node:path";

/**
 * A container engine on a unix socket, answering the Docker Engine API calls `svc doctor --deep`
 * makes as dockerd answers them: `GET /_ping`, `GET /version`, `GET /images/{name}/json` (404
 * `No such image`), and a container's life (`POST /containers/create`, `.../start`, `.../wait`,
 * `GET .../logs` as multiplexed frames without a TTY, `DELETE /containers/{id}`). A container
 * "runs" its entrypoint by looking it up in its image's `commands`: the output and exit code
 * given there; a command the image lacks fails the start as runc does (400, "executable file not
 * found in $PATH").
 */
export interface FakeImage {
  /** the image's USER; empty: root, so the container runs as `sandboxes.user` */
  user?: string;
  /** executable → what running it prints and its exit code */
  commands: Record<string, { stdout: string; exitCode?: number }>;
}

export interface FakeEngine {
  socket: string;
  images: Map<string, FakeImage>;
  /** every container made: its create body and whether it was removed */
  containers: { id: string; body: Record<string, unknown>; removed: boolean }[];
  requests: { method: string; path: string }[];
  close(): Promise<void>;
}

interface Running {
  id: string;
  body: Record<string, unknown>;
  removed: boolean;
  exitCode?: number;
  output?: string;
}

export async function startFakeEngine(dir: string, images: Record<string, FakeImage>): Promise<FakeEngine> {
  const socket = join(dir, "docker.sock");
  const state = new Map(Object.entries(images));
  const containers: Running[] = [];
  const requests: { method: string; path: string }[] = [];
  const send = (res: ServerResponse, status: number, body?: unknown) => {
    if (body === undefined) {
      res.writeHead(status);
      res.end();
      return;
    }
    res.writeHead(status, { "content-type": "application/json", "api-version": "1.47" });
    res.end(JSON.stringify(body));
  };
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const url = new URL(req.url ?? "/", "http://engine");
    // dockerode may prefix a version (/v1.47/...)
    const path = url.pathname.replace(/^\/v\d+\.\d+/, "");
    const method = req.method ?? "GET";
    requests.push({ method, path });
    if (method === "GET" && path === "/_ping") {
      res.writeHead(200, { "content-type": "text/plain; charset=utf-8", "api-version": "1.47" });
      res.end("OK");
      return;
    }
    if (method === "GET" && path === "/version")
      return send(res, 200, { Version: "27.5.1", ApiVersion: "1.47", Os: "linux", Arch: "amd64" });
    const image = /^\/images\/(.+)\/json$/.exec(path);
    if (method === "GET" && image) {
      const name = decodeURIComponent(image[1]!);
      const found = state.get(name);
      if (!found) return send(res, 404, { message: `No such image: ${name}` });
      return send(res, 200, {
        Id: `sha256:${randomBytes(32).toString("hex")}`,
        RepoTags: [name],
        Config: { User: found.user ?? "" },
      });
    }
    if (method === "POST" && path === "/containers/create") {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown>;
      const name = String(body.Image);
      if (!state.has(name)) return send(res, 404, { message: `No such image: ${name}` });
      const id = randomBytes(32).toString("hex");
      containers.push({ id, body, removed: false });
      return send(res, 201, { Id: id, Warnings: [] });
    }
    const container = /^\/containers\/([0-9a-f]+)(?:\/(start|wait|logs))?$/.exec(path);
    const running = container ? containers.find((entry) => entry.id === container[1]) : undefined;
    if (!container || !running || running.removed)
      return send(res, 404, { message: `No such container: ${container?.[1] ?? path}` });
    const action = container[2];
    if (method === "POST" && action === "start") {
      const entrypoint = (running.body.Entrypoint as string[] | undefined)?.[0] ?? "";
      const command = state.get(String(running.body.Image))!.commands[entrypoint];
      if (!command)
        return send(res, 400, {
          message: `failed to create task for container: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: error during container init: exec: "${entrypoint}": executable file not found in $PATH: unknown`,
        });
      running.exitCode = command.exitCode ?? 0;
      running.output = command.stdout;
      return send(res, 204);
    }
    if (method === "POST" && action === "wait")
      return send(res, 200, { StatusCode: running.exitCode ?? 0, Error: null });
    if (method === "GET" && action === "logs") {
      const text = Buffer.from(running.output ?? "", "utf8");
      const header = Buffer.alloc(8);
      header[0] = 1;
      header.writeUInt32BE(text.length, 4);
      res.writeHead(200, { "content-type": "application/vnd.docker.multiplexed-stream" });
      res.end(text.length ? Buffer.concat([header, text]) : Buffer.alloc(0));
      return;
    }
    if (method === "DELETE" && !action) {
      running.removed = true;
      return send(res, 204);
    }
    return send(res, 404, { message: "page not found" });
  };
  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error: Error) => send(res, 500, { message: error.message }));
  });
  await new Promise<void>((resolve) => server.listen(socket, resolve));
  return {
    socket,
    images: state,
    containers,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
