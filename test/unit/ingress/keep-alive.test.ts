import { Agent, request } from "node:http";
import express from "express";
import { describe, expect, it } from "vitest";
import { listen } from "../../../ingress/server.ts";

function get(agent: Agent, port: number): Promise<{ status: number; socketId: number }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path: "/", agent }, (res) => {
      res.resume();
      res.on("end", () => resolve({ status: res.statusCode ?? 0, socketId: socketIds.get(req.socket!)! }));
    });
    req.on("error", reject);
    req.end();
  });
}
const socketIds = new WeakMap<object, number>();

describe("ingress keep-alive", () => {
  it("keeps idle connections open longer than a reverse proxy does (past Node's 5 s default), so a pooled connection is never cut under a request", async () => {
    const app = express();
    app.get("/", (_req, res) => {
      res.json({ ok: true });
    });
    const listening = await listen(app, "127.0.0.1", 0);
    expect(listening.server.keepAliveTimeout).toBeGreaterThan(60_000);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    let sockets = 0;
    agent.on("free", (socket) => {
      if (!socketIds.has(socket)) socketIds.set(socket, ++sockets);
    });
    try {
      const first = await get(agent, listening.port);
      // idle past Node's default keepAliveTimeout (5 s), as a connection pooled by a proxy would be
      await new Promise((settle) => setTimeout(settle, 6_000));
      const second = await get(agent, listening.port);
      expect([first.status, second.status]).toEqual([200, 200]);
      expect(sockets).toBe(1);
    } finally {
      agent.destroy();
      await listening.drain(1_000);
    }
  }, 20_000);
});
