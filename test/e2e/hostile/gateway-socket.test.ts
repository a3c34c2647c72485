import { rm } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { rawRequest } from "../../support/raw-http.ts";
import { type RoleProcess, startIngress, startWorkerProcess, writeConfigDir } from "../worker/processes.ts";

/**
 * A sandboxed agent's one way out is the worker's gateway socket, mounted into its container; what
 * is not a model call goes on to the daemon. The worker reaches the daemon from loopback, and a
 * local install (no tokens) gives a loopback client `*`: the attack is a request from the
 * container, without a token, that the gateway would carry to the daemon as a loopback client.
 * The gateway carries only requests with a bearer token, marked as forwarded, so the daemon judges
 * the container's own token and never its loopback address.
 */
describe("hostile: a sandbox borrows the worker's loopback through the gateway socket", () => {
  let database: TestDatabase;
  let dir: string;
  let ingress: RoleProcess;
  let worker: RoleProcess;
  let url: string;
  let socketPath: string;

  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    dir = await writeConfigDir({
      "daemon.yaml":
        "targets:\n  local: { runtime: command, command: [/bin/cat] }\nask:\n  targets: [local]\n",
    });
    const env = { SVC_CONFIG_DIR: dir, SVC_DATABASE_URL: database.url };
    const started = await startIngress(env);
    ingress = started.role;
    url = started.url;
    worker = await startWorkerProcess({ ...env, SVC_DAEMON_URL: url });
    const listening = await worker.waitForLog(
      (line) => line.event === "gateway.listening",
      "gateway.listening",
    );
    socketPath = String(listening.socket);
  }, 120_000);

  afterAll(async () => {
    await worker?.stop();
    await ingress?.stop();
    await database?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("the daemon gives a loopback client without a token `*` (what the attack would borrow)", async () => {
    const direct = await rawRequest({
      host: "127.0.0.1",
      port: Number(new URL(url).port),
      path: "/triggers",
      method: "GET",
    });
    expect(direct.status).toBe(200);
  });

  it("the same request through the socket is refused by the gateway before it reaches the daemon", async () => {
    const through = await rawRequest({
      socketPath,
      path: "/triggers",
      method: "GET",
      headers: { host: "127.0.0.1" },
    });
    expect(through.status).toBe(401);
    expect(JSON.parse(through.text)).toEqual({
      error: {
        code: "unauthenticated",
        message: "svc's gateway forwards to the daemon only a request with a bearer token",
      },
    });
  });

  it("a request with a bearer token goes on to the daemon, which judges that token", async () => {
    const through = await rawRequest({
      socketPath,
      path: "/triggers",
      method: "GET",
      headers: { host: "127.0.0.1", authorization: "Bearer svc_not-a-real-token" },
    });
    expect(through.status).toBe(401);
    // the daemon's own refusal, not the gateway's
    expect(JSON.parse(through.text).error.message).not.toMatch(/gateway/);
  });

  it("a model call through the socket needs a live gateway token, as on the loopback port", async () => {
    const through = await rawRequest({
      socketPath,
      path: "/v1/messages",
      method: "POST",
      headers: { host: "127.0.0.1", "x-api-key": "sk-ant-guess" },
    });
    expect(through.status).toBe(401);
    expect(JSON.parse(through.text)).toMatchObject({
      type: "error",
      error: { type: "authentication_error" },
    });
  });
});
