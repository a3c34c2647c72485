import { rm } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { freePort } from "../../support/free-port.ts";
import { rawRequest } from "../../support/raw-http.ts";
import { type RoleProcess, startWorkerProcess, writeConfigDir } from "../worker/processes.ts";

function get(port: number, headers: Record<string, string>) {
  return rawRequest({ host: "127.0.0.1", port, path: "/metrics", method: "GET", headers });
}

/**
 * A local install's worker serves `/metrics` without a token, on loopback. A web page in the
 * operator's browser reaches the same socket: under a DNS-rebinding name (its own Host) it could
 * read the response, and a cross-site fetch sends its Origin. The worker answers local programs
 * only, by the same rule as the ingress (shared/loopback-client.ts).
 */
describe("hostile: a web page reads a local worker's metrics", () => {
  let database: TestDatabase;
  let dir: string;
  let worker: RoleProcess;
  let port: number;

  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    port = await freePort();
    dir = await writeConfigDir({
      "daemon.yaml": `targets:\n  local: { runtime: command, command: [/bin/cat] }\nask:\n  targets: [local]\nworker:\n  metrics_port: ${port}\n`,
    });
    worker = await startWorkerProcess({ SVC_CONFIG_DIR: dir, SVC_DATABASE_URL: database.url });
    await worker.waitForLog((line) => line.event === "worker.metrics_listening", "worker.metrics_listening");
  }, 120_000);

  afterAll(async () => {
    await worker?.stop();
    await database?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("a local program (curl, Prometheus on this host) reads them", async () => {
    const answer = await get(port, { host: `127.0.0.1:${port}` });
    expect(answer.status).toBe(200);
    expect(answer.text).toContain("svc_");
  });

  it("a DNS-rebinding page (its own name in Host) is refused", async () => {
    const answer = await get(port, { host: `rebind.evil.example:${port}` });
    expect(answer.status).toBe(401);
    expect(answer.text).not.toContain("svc_");
    expect(JSON.parse(answer.text).error.message).toContain("Host header");
  });

  it("a cross-site fetch (a foreign Origin) is refused", async () => {
    const answer = await get(port, {
      host: `127.0.0.1:${port}`,
      origin: "https://evil.example",
      "sec-fetch-site": "cross-site",
    });
    expect(answer.status).toBe(401);
    expect(answer.text).not.toContain("svc_");
  });
});
