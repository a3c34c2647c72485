import type { AddressInfo } from "node:net";
import { createConnection, createServer, type Server, type Socket } from "node:net";

/**
 * A network link on loopback between a process and a TCP server (Postgres), that a test can cut and
 * mend: cut, every connection through it is reset and new ones are reset as they arrive, as a host
 * cut off by a rejecting firewall sees it; mended, connections pass again. The bytes are relayed as
 * they are: the link understands nothing of what crosses it.
 */
export interface TcpLink {
  /** `host:port` of the link's end the process connects to */
  address: string;
  cut(): void;
  mend(): void;
  close(): Promise<void>;
}

export async function startTcpLink(target: { host: string; port: number }): Promise<TcpLink> {
  let up = true;
  const open = new Set<Socket>();
  const server: Server = createServer((client) => {
    if (!up) {
      client.resetAndDestroy();
      return;
    }
    const upstream = createConnection(target);
    for (const socket of [client, upstream]) {
      open.add(socket);
      socket.on("close", () => open.delete(socket));
      // a reset on one side is passed on by destroying the other: nothing to report
      socket.on("error", () => {});
    }
    client.pipe(upstream).pipe(client);
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    address: `127.0.0.1:${port}`,
    cut() {
      up = false;
      for (const socket of open) socket.resetAndDestroy();
    },
    mend() {
      up = true;
    },
    close: async () => {
      for (const socket of open) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
