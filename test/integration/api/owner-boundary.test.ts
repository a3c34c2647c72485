import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { newId } from "../../../shared/ids.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { type ApiHarness, apiConfig, startApi, tokensBlock } from "./support.ts";

/** What a caller can observe of an answer: status, headers (but the clock) and the exact bytes. */
async function observe(
  response: Response,
): Promise<{ status: number; headers: [string, string][]; body: string }> {
  const headers = [...response.headers.entries()].filter(([name]) => name !== "date").sort();
  return { status: response.status, headers, body: await response.text() };
}

let db: TestDatabase;
let api: ApiHarness;
let workload: string;
let invocation: string;

const A = "secret-alice";
const B = "secret-bob";
const ADMIN_OF_WORKLOADS = "secret-wadmin";
const DAEMON_ADMIN = "secret-dadmin";
const STAR = "secret-star";

beforeAll(async () => {
  db = await createTestDatabase(inject("adminDatabaseUrl"));
  api = await startApi(
    db.url,
    apiConfig({
      tokens: tokensBlock({
        alice: ["workloads:read", "workloads:write"],
        bob: ["workloads:read", "workloads:write"],
        wadmin: ["workloads:admin"],
        dadmin: ["admin", "workloads:read", "workloads:write"],
        star: ["*"],
      }),
    }),
  );
  const created = await api.request("POST", "/workloads", { token: A, body: { pipeline: "plain" } });
  expect(created.status).toBe(201);
  workload = ((await created.json()) as { workload: { id: string; owner: string } }).workload.id;
  const submitted = await api.request("POST", `/workloads/${workload}/invocations`, { token: A, body: {} });
  expect(submitted.status).toBe(202);
  invocation = ((await submitted.json()) as { invocation: { id: string } }).invocation.id;
});

afterAll(async () => {
  await api?.close();
  await db?.drop();
});

describe("owner boundary", () => {
  it("the creator sees its workload, its invocation and the invocation's artifacts", async () => {
    const own = await api.request("GET", `/workloads/${workload}`, { token: A });
    expect(own.status).toBe(200);
    const body = (await own.json()) as { workload: { owner: string }; invocations: { id: string }[] };
    expect(body.workload.owner).toBe("token:alice");
    expect(body.invocations.map((row) => row.id)).toEqual([invocation]);
    expect((await api.request("GET", `/invocations/${invocation}`, { token: A })).status).toBe(200);
    expect((await api.request("GET", `/invocations/${invocation}/artifacts`, { token: A })).status).toBe(200);
  });

  const reads: [string, (ids: { w: string; i: string }) => string][] = [
    ["GET /workloads/:id", (ids) => `/workloads/${ids.w}`],
    ["GET /invocations/:id", (ids) => `/invocations/${ids.i}`],
    ["GET /invocations/:id/artifacts", (ids) => `/invocations/${ids.i}/artifacts`],
  ];
  for (const [label, path] of reads) {
    it(`${label}: another token's record answers byte-identically to a nonexistent id`, async () => {
      const absent = { w: newId("workload"), i: newId("invocation") };
      const foreign = await observe(
        await api.request("GET", path({ w: workload, i: invocation }), { token: B }),
      );
      const missing = await observe(await api.request("GET", path(absent), { token: B }));
      expect(foreign.status).toBe(404);
      expect(foreign).toEqual(missing);
    });
  }

  const writes: [string, (ids: { w: string; i: string }) => string][] = [
    ["POST /workloads/:id/close", (ids) => `/workloads/${ids.w}/close`],
    ["POST /workloads/:id/invocations", (ids) => `/workloads/${ids.w}/invocations`],
    ["POST /invocations/:id/cancel", (ids) => `/invocations/${ids.i}/cancel`],
  ];
  for (const [label, path] of writes) {
    it(`${label}: another token's record answers like an absent one and is left unchanged`, async () => {
      const before = await api.pool.query("SELECT status FROM svc.invocations WHERE workload_id = $1", [
        workload,
      ]);
      const absent = { w: newId("workload"), i: newId("invocation") };
      const foreign = await observe(
        await api.request("POST", path({ w: workload, i: invocation }), { token: B, body: {} }),
      );
      const missing = await observe(await api.request("POST", path(absent), { token: B, body: {} }));
      expect(foreign.status).toBe(404);
      expect(foreign).toEqual(missing);
      const after = await api.pool.query("SELECT status FROM svc.invocations WHERE workload_id = $1", [
        workload,
      ]);
      expect(after.rows).toEqual(before.rows);
    });
  }

  it("another token's listing does not include the workload", async () => {
    const list = (await (await api.request("GET", "/workloads", { token: B })).json()) as {
      workloads: unknown[];
    };
    expect(list.workloads).toEqual([]);
  });

  it("admin does not cross the boundary, even with workloads:read", async () => {
    const response = await api.request("GET", `/workloads/${workload}`, { token: DAEMON_ADMIN });
    expect(response.status).toBe(404);
  });

  for (const [label, token] of [
    ["workloads:admin", ADMIN_OF_WORKLOADS],
    ["*", STAR],
  ] as const) {
    it(`${label} sees and lists the workload`, async () => {
      expect((await api.request("GET", `/workloads/${workload}`, { token })).status).toBe(200);
      expect((await api.request("GET", `/invocations/${invocation}`, { token })).status).toBe(200);
      const list = (await (await api.request("GET", "/workloads", { token })).json()) as {
        workloads: { id: string }[];
      };
      expect(list.workloads.map((row) => row.id)).toContain(workload);
    });
  }

  it("the invocation record carries diagnostic and never failureReason", async () => {
    const body = (await (await api.request("GET", `/invocations/${invocation}`, { token: A })).json()) as {
      invocation: Record<string, unknown>;
    };
    expect(body.invocation).toHaveProperty("diagnostic", null);
    expect(JSON.stringify(body)).not.toMatch(/failure_?reason/i);
  });

  it("the owner cancels, then closes; workloads:admin may act across owners", async () => {
    const cancelled = await api.request("POST", `/invocations/${invocation}/cancel`, {
      token: ADMIN_OF_WORKLOADS,
      body: {},
    });
    expect(cancelled.status).toBe(200);
    const body = (await cancelled.json()) as { invocation: { status: string; diagnostic: { code: string } } };
    expect(body.invocation.status).toBe("cancelled");
    expect(body.invocation.diagnostic.code).toBe("cancelled");
    const closed = await api.request("POST", `/workloads/${workload}/close`, { token: A, body: {} });
    expect(closed.status).toBe(200);
    expect(((await closed.json()) as { workload: { status: string } }).workload.status).toBe("closed");
    const late = await api.request("POST", `/workloads/${workload}/invocations`, { token: A, body: {} });
    expect(late.status).toBe(409);
  });
});
