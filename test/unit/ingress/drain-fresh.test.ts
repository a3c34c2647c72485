import { connect, type Socket } from "node:net";
import express from "express";
import { describe, expect, it } from "vitest";
import { listen } from "../../../ingress/server.ts";

const opened = (port: number) =>
  new Promise<Socket>((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => resolve(socket));
    socket.on("error", reject);
  });

describe("ingress drain", () => {
  // a browser with the UI open preconnects sockets it may never use; Node's closeIdleConnections
  // leaves a socket that never sent a request, so `svc daemon restart` waited out the whole grace
  it("closes a connection that has sent nothing at once, and still answers one whose request is arriving", async () => {
    const app = express();
    app.get("/", (_req, res) => {
      res.json({ ok: true });
    });
    const listening = await listen(app, "127.0.0.1", 0);
    const silent = await opened(listening.port);
    const arriving = await opened(listening.port);
    arriving.write("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    const closed = new Promise<void>((resolve) => silent.once("close", () => resolve()));
    let answer = "";
    arriving.on("data", (chunk) => (answer += chunk.toString("utf8")));
    const answered = new Promise<void>((resolve) => arriving.once("close", () => resolve()));
    await new Promise((settle) => setTimeout(settle, 100));
    // a grace far longer than the test's own time-out: only the fix lets drain end in time
    const drained = listening.drain(600_000);
    await closed;
    arriving.write("\r\n");
    await answered;
    await drained;
    expect(answer).toMatch(/^HTTP\/1\.1 200 OK/);
    expect(answer).toContain("Connection: close");
  }, 20_000);
});
