import {
  Agent,
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  request,
  type Server,
  type ServerResponse,
} from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A small reverse proxy on loopback, standing in for the nginx of deploy/nginx/ (which a clean
 * machine may lack): X-Forwarded-For and X-Real-IP added as nginx adds them, round-robin over the upstreams, bodies forwarded as raw bytes, and `502` when
 * the upstream connection fails after the request went out. Like nginx, a refused connection
 * (nothing sent) goes to the next upstream, and that upstream is skipped for 5 s; a POST that
 * already went out is never sent twice: the caller retries.
 */
export interface ReverseProxy {
  url: string;
  /** answers per upstream index, and 502s */
  counts: { perUpstream: number[]; badGateway: number; errors: Record<string, number> };
  setUpstreams(urls: string[]): void;
  close(): Promise<void>;
}

const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "upgrade",
  "te",
  "trailer",
]);

function forwardHeaders(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name)) continue;
    out[name] = value;
  }
  return out;
}

export async function startReverseProxy(initial: string[]): Promise<ReverseProxy> {
  let upstreams = [...initial];
  let next = 0;
  const counts = { perUpstream: initial.map(() => 0), badGateway: 0, errors: {} as Record<string, number> };
  // an idle upstream connection is dropped after 2 s, before the ingress drops it at 5 s (Node's
  // keepAliveTimeout): reusing a socket the server is closing would cut a request for nothing
  const agent = new Agent({ keepAlive: true, maxSockets: 64, timeout: 2_000 });
  /** an upstream that refused a connection is skipped for this long, like nginx's fail_timeout */
  const downUntil = new Map<number, number>();
  const pick = (): number | undefined => {
    for (let tried = 0; tried < upstreams.length; tried++) {
      const index = next++ % upstreams.length;
      if ((downUntil.get(index) ?? 0) <= Date.now()) return index;
    }
    return undefined;
  };
  const badGateway = (res: ServerResponse) => {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    counts.badGateway++;
    const text = JSON.stringify({
      error: { code: "bad_gateway", message: "the upstream ingress did not answer" },
    });
    res.writeHead(502, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
    res.end(text);
  };
  const forward = (req: IncomingMessage, res: ServerResponse, body: Buffer, attemptsLeft: number) => {
    const index = pick();
    if (index === undefined) return badGateway(res);
    const target = new URL(req.url ?? "/", upstreams[index]);
    const headers = forwardHeaders(req.headers);
    headers["content-length"] = String(body.length);
    // as deploy/nginx/svc-proxy.conf does: the ingress tells forwarded requests from loopback clients
    const peer = req.socket.remoteAddress ?? "";
    const before = req.headers["x-forwarded-for"];
    headers["x-forwarded-for"] = before ? `${before}, ${peer}` : peer;
    headers["x-real-ip"] = peer;
    const upstream = request(target, { method: req.method, headers, agent });
    upstream.setTimeout(60_000, () => upstream.destroy(new Error("upstream timeout")));
    upstream.on("response", (answer) => {
      counts.perUpstream[index] = (counts.perUpstream[index] ?? 0) + 1;
      res.writeHead(answer.statusCode ?? 502, {
        ...forwardHeaders(answer.headers),
        "x-drill-upstream": String(index),
      });
      answer.pipe(res);
      answer.on("error", () => res.destroy());
    });
    upstream.on("error", (error: NodeJS.ErrnoException) => {
      const key = `${error.code ?? error.message}${upstream.reusedSocket ? " (reused socket)" : ""}`;
      counts.errors[key] = (counts.errors[key] ?? 0) + 1;
      // refused: nothing reached the upstream, so another one may take the request (nginx does too)
      if (error.code === "ECONNREFUSED") {
        downUntil.set(index, Date.now() + 5_000);
        if (attemptsLeft > 1 && !res.headersSent) return forward(req, res, body, attemptsLeft - 1);
      }
      badGateway(res);
    });
    upstream.end(body);
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => forward(req, res, Buffer.concat(chunks), upstreams.length));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    counts,
    setUpstreams(urls) {
      upstreams = [...urls];
    },
    close: async () => {
      agent.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
