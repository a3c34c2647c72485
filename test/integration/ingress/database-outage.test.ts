import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { countRows, type Harness, startHarness } from "./harness.ts";
import { snapshot, startTcpProxy, type TcpProxy, viaProxy } from "./support.ts";

const TOKEN = "outage-token-1";

describe("ingress while the database is unreachable", () => {
  let database: TestDatabase;
  let proxy: TcpProxy;
  let harness: Harness;

  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    proxy = await startTcpProxy(database.url);
    harness = await startHarness(
      database.url,
      snapshot({ hook: { verify: "bearer", secret: { kind: "inline", value: TOKEN } } }),
      { appDatabaseUrl: viaProxy(database.url, proxy.port) },
    );
  });
  afterAll(async () => {
    proxy?.restore();
    await harness?.close();
    await proxy?.close();
    await database?.drop();
  });

  const send = (key: string) =>
    fetch(`${harness.url}/webhooks/hook`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        authorization: `Bearer ${TOKEN}`,
        "idempotency-key": key,
      },
      body: JSON.stringify({ key }),
    });

  it("answers 503 with Retry-After (never 2xx) while it is down, and serves again once it is back", async () => {
    expect((await send("before")).status).toBe(202);
    // the pool now holds idle connections through the proxy; cutting kills them under the pool
    proxy.cut();
    for (const key of ["down-1", "down-2", "down-3"]) {
      const response = await send(key);
      expect(response.status).toBe(503);
      expect(response.headers.get("retry-after")).toMatch(/^\d+$/);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe(
        "database_unavailable",
      );
    }
    const health = await fetch(`${harness.url}/health`);
    expect(health.status).toBe(503);
    expect(health.headers.get("retry-after")).toMatch(/^\d+$/);

    proxy.restore();
    expect((await fetch(`${harness.url}/health`)).status).toBe(200);
    const after = await send("down-1");
    expect(after.status).toBe(202);
    // what was refused with 503 was not stored: the retry creates the trigger, once
    const { rows } = await harness.pool.query("SELECT delivery_id FROM svc.triggers ORDER BY created_at");
    expect(rows.map((row) => row.delivery_id)).toEqual(["before", "down-1"]);
    expect(await countRows(harness.pool)).toEqual({ triggers: 2, jobs: 2 });
    expect(harness.logs.some((line) => line.event === "webhook.unavailable")).toBe(true);
  });
});
