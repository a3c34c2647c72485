import { connect, createServer, type Socket } from "node:net";
import type { ConfigSnapshot, WebhookSource } from "../../../shared/config/types.ts";

/** A complete snapshot as the loader would produce it, with only the webhook sources that matter here. */
export function snapshot(
  sources: Record<string, Omit<WebhookSource, "name">>,
  maxBodyBytes = 1024 * 1024,
): ConfigSnapshot {
  return {
    dir: "/nonexistent/.svc",
    server: { host: "127.0.0.1", port: 0 },
    webhooks: {
      maxBodyBytes,
      sources: Object.fromEntries(
        Object.entries(sources).map(([name, source]) => [name, { name, ...source }]),
      ),
    },
    targets: {},
    ask: { targets: ["local"] },
    knowledge: { retrieval: { engine: "local", rewrite: { targets: [] } } },
    repos: {},
    channels: { chat: { bots: {} } },
    queue: {},
    hostTools: {},
    auth: null,
    worker: { concurrency: 1, graceMs: 1000 },
    workspaces: {
      checkoutRetentionDays: 30,
      transcriptRetentionDays: 90,
      repoCache: { maxSizeBytes: 20 * 1024 ** 3 },
    },
    pipelines: {},
    agents: {},
    skills: {},
    policies: {},
    members: [],
  };
}

export interface TcpProxy {
  port: number;
  /** drops every open connection and refuses new ones, as a dead database server would */
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

/** A loopback TCP proxy in front of Postgres, so a test can take the database away and bring it back. */
export async function startTcpProxy(targetUrl: string): Promise<TcpProxy> {
  const target = new URL(targetUrl);
  const sockets = new Set<Socket>();
  let up = true;
  const server = createServer((client) => {
    if (!up) {
      client.destroy();
      return;
    }
    const upstream = connect({ host: target.hostname, port: Number(target.port || 5432) });
    sockets.add(client).add(upstream);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on("error", drop).on("close", drop);
    upstream.on("error", drop).on("close", drop);
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (typeof address !== "object" || !address) throw new Error("proxy has no port");
  return {
    port: address.port,
    cut() {
      up = false;
      for (const socket of sockets) socket.destroy();
      sockets.clear();
    },
    restore() {
      up = true;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

export function viaProxy(url: string, proxyPort: number): string {
  const parsed = new URL(url);
  parsed.hostname = "127.0.0.1";
  parsed.port = String(proxyPort);
  return parsed.toString();
}
