import { createServer, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import type { Express } from "express";
import type { Logger } from "../shared/logger.ts";

export interface ListeningServer {
  server: Server;
  host: string;
  port: number;
  /**
   * Stops accepting connections, lets requests in flight finish (up to `graceMs`, then cuts what is
   * left), and resolves once every connection is closed.
   */
  drain(graceMs?: number): Promise<void>;
}

export class ListenError extends Error {}

export async function listen(app: Express, host: string, port: number): Promise<ListeningServer> {
  let draining = false;
  // connections that have not sent a request yet: Node's closeIdleConnections leaves them open, and
  // a browser's preconnected socket would hold a drain for its whole grace period
  const fresh = new Set<Socket>();
  const server = createServer((req, res) => {
    fresh.delete(req.socket);
    // a keep-alive connection that sends another request while we drain gets it answered, then closed
    if (draining) res.setHeader("Connection", "close");
    app(req, res);
  });
  server.on("connection", (socket: Socket) => {
    if (draining) return void socket.destroy();
    fresh.add(socket);
    socket.once("close", () => fresh.delete(socket));
  });
  // a caller that stalls mid-request must not hold a drain open forever
  server.requestTimeout = 60_000;
  server.headersTimeout = 20_000;
  // Behind a reverse proxy that keeps upstream connections open, the proxy must close an idle
  // connection before we do: otherwise it can send a POST on a socket we are closing and answer
  // 502 without retrying (POST is not idempotent). Proxies default to 60 s (nginx's upstream
  // keepalive_timeout, most load balancers); Node's own default is 5 s.
  server.keepAliveTimeout = 75_000;
  await new Promise<void>((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      reject(
        new ListenError(
          error.code === "EADDRINUSE"
            ? `${host}:${port} is already in use; stop the other process or set SVC_PORT (server.port) to a free port`
            : `cannot listen on ${host}:${port}: ${error.message}`,
        ),
      );
    };
    server.once("error", onError);
    server.listen(port, host, () => {
      server.off("error", onError);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  return {
    server,
    host,
    port: address.port,
    drain: (graceMs = 30_000) => {
      draining = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // close() only closes the connections idle at that instant; connections whose request
      // finishes later become idle afterwards and are closed by this sweep
      const sweepIdle = () => {
        server.closeIdleConnections();
        // only a socket that has sent nothing: one whose request is still arriving gets its answer
        for (const socket of fresh) if (socket.bytesRead === 0) socket.destroy();
      };
      sweepIdle();
      const sweep = setInterval(sweepIdle, 50);
      const cut = setTimeout(() => server.closeAllConnections(), graceMs);
      return closed.finally(() => {
        clearInterval(sweep);
        clearTimeout(cut);
      });
    },
  };
}

/**
 * SIGHUP is logged and ignored (configuration changes need a restart; there is no reload).
 * SIGTERM and SIGINT run `stop` once; a second one while draining is logged and waits.
 */
export function handleSignals(logger: Logger, stop: (signal: NodeJS.Signals) => Promise<void>): () => void {
  let stopping = false;
  const onHup = () => {
    logger.info("SIGHUP ignored: configuration is read once at start-up; restart to apply changes", {
      event: "signal.ignored",
      signal: "SIGHUP",
    });
  };
  const onStop = (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.info(`${signal} received while already stopping`, { event: "signal.repeated", signal });
      return;
    }
    stopping = true;
    void stop(signal);
  };
  process.on("SIGHUP", onHup);
  process.on("SIGTERM", onStop);
  process.on("SIGINT", onStop);
  return () => {
    process.off("SIGHUP", onHup);
    process.off("SIGTERM", onStop);
    process.off("SIGINT", onStop);
  };
}
