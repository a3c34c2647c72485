import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { type ApiHarness, apiConfig, startApi, tokensBlock } from "./support.ts";

/** The tool protocol's own scope gate: every under-scoped call answers the JSON-RPC error Forbidden. */
let db: TestDatabase;
let api: ApiHarness;

beforeAll(async () => {
  db = await createTestDatabase(inject("adminDatabaseUrl"));
  api = await startApi(
    db.url,
    apiConfig({
      tokens: tokensBlock({
        reader: ["mcp:read"],
        writer: ["mcp:write"],
        lint: ["mcp:write", "host:execute:lint"],
        onlyexec: ["host:execute:lint"],
      }),
    }),
  );
});

afterAll(async () => {
  await api?.close();
  await db?.drop();
});

const call = {
  jsonrpc: "2.0",
  id: 3,
  method: "tools/call",
  params: { name: "host_lint", arguments: { path: "p" } },
};
const list = { jsonrpc: "2.0", id: 4, method: "tools/list" };

const cases: [string, string, unknown, boolean][] = [
  ["mcp:read", "secret-reader", list, true],
  ["mcp:read", "secret-reader", call, false],
  ["mcp:write", "secret-writer", list, true],
  ["mcp:write without host:execute:lint", "secret-writer", call, false],
  ["mcp:write + host:execute:lint", "secret-lint", call, true],
  ["host:execute:lint alone", "secret-onlyexec", list, false],
  ["host:execute:lint alone", "secret-onlyexec", call, false],
];

describe("tool-protocol scopes", () => {
  for (const [label, token, body, allowed] of cases) {
    const method = (body as { method: string }).method;
    it(`${method} with ${label} is ${allowed ? "allowed" : "Forbidden"}`, async () => {
      const response = await api.request("POST", "/mcp", { token, body });
      const answer = (await response.json()) as { error?: { message: string } };
      if (allowed) {
        expect(response.status).toBe(200);
        expect(answer.error).toBeUndefined();
      } else {
        expect(response.status).toBe(403);
        expect(answer.error?.message).toBe("Forbidden");
      }
    });
  }
});
