import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { issueRunToken } from "../../../db/api_tokens.ts";
import { API_ROUTES } from "../../../ingress/api/routes.ts";
import type { RouteSpec } from "../../../ingress/api/types.ts";
import { SCOPES } from "../../../shared/scopes.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import {
  type ApiHarness,
  apiConfig,
  type SeededLineage,
  seedLineage,
  startApi,
  tokensBlock,
  VIA_PROXY,
} from "./support.ts";

/**
 * Every route of the table × every kind of caller, with the expected answer written from the
 * contract's scope rules (not computed by the code under test). Denied means 401 or 403;
 * allowed means the request got past access control (the handler may still answer 4xx).
 */
const SINGLE_SCOPES = [...SCOPES.filter((scope) => scope !== "*"), "host:execute:lint"];

type Caller =
  | { kind: "none" }
  | { kind: "loopback" }
  | { kind: "scope"; scope: string }
  | { kind: "scopes"; scopes: string[] }
  | { kind: "star" }
  | { kind: "out-of-vocabulary"; scopes: string[] }
  | { kind: "sandboxed" };

function tokenName(scope: string): string {
  return `only-${scope.replace(/[^a-z0-9]/gi, "-")}`;
}

function expectedAllowed(route: RouteSpec, caller: Caller): boolean {
  switch (caller.kind) {
    case "none":
    case "out-of-vocabulary":
      return false;
    case "star":
    case "loopback":
      return true;
    case "sandboxed":
      // it carries `*` but host tools refuse it, and as a run's token it may not trust a note
      // (docs/api.md, "Notes": a run never grants itself trust)
      return (
        route.scope !== "host:execute:<name>" && !(route.method === "PATCH" && route.path === "/notes/:id")
      );
    case "scopes":
      // a route needing two scopes is open to a caller holding both, each written out
      return [route.scope, ...(route.alsoScope ? [route.alsoScope] : [])].every((needed) =>
        caller.scopes.some((s) => grants(s, needed)),
      );
    case "scope":
      if (route.alsoScope) return false;
      return grants(caller.scope, route.scope);
  }
}

/** Whether one scope opens a route requiring `needed` (the contract's scope table). */
function grants(s: string, needed: string): boolean {
  if (needed === "authenticated") return true;
  if (needed === "host:execute:<name>") return s === "host:execute:lint";
  if (needed === s) return true;
  if (s === "workloads:admin") return needed === "workloads:read" || needed === "workloads:write";
  if (s === "mcp:write") return needed === "mcp:read";
  return false;
}

function pathFor(route: RouteSpec, ids: SeededLineage): string {
  return route.path
    .replace(":owner/:name", "acme/widgets")
    .replace(":name", route.path.startsWith("/host-tools") ? "lint" : "plain")
    .replace(
      ":id",
      route.path.startsWith("/trace") || route.path.startsWith("/triggers")
        ? ids.trigger
        : route.path.startsWith("/invocations")
          ? ids.invocation
          : ids.workload,
    );
}

function bodyFor(route: RouteSpec): unknown {
  if (route.method === "GET") return undefined;
  if (route.path === "/mcp") return { jsonrpc: "2.0", id: 1, method: "tools/list" };
  if (route.path === "/host-tools/:name") return { input: { path: "src" } };
  if (route.path === "/workloads" || route.path === "/dispatch")
    return { pipeline: "plain", url: "https://example.com/x" };
  return {};
}

function denied(status: number): boolean {
  return status === 401 || status === 403;
}

let db: TestDatabase;
let api: ApiHarness;
let ids: SeededLineage;
let sandboxToken: string;

const callers: { label: string; caller: Caller; token?: () => string; headers?: Record<string, string> }[] = [
  { label: "no token through a proxy", caller: { kind: "none" }, headers: VIA_PROXY },
  { label: "no token on loopback", caller: { kind: "loopback" } },
  ...SINGLE_SCOPES.map((scope) => ({
    label: `only ${scope}`,
    caller: { kind: "scope", scope } as Caller,
    token: () => `secret-${tokenName(scope)}`,
  })),
  {
    label: "evals:write + pipelines:invoke",
    caller: { kind: "scopes", scopes: ["evals:write", "pipelines:invoke"] },
    token: () => "secret-eval-runner",
  },
  { label: "*", caller: { kind: "star" }, token: () => "secret-star" },
  {
    label: "pipelines:*",
    caller: { kind: "out-of-vocabulary", scopes: ["pipelines:*"] },
    token: () => "secret-old-pipelines",
  },
  {
    label: "triggers:read + agents:*",
    caller: { kind: "out-of-vocabulary", scopes: ["triggers:read", "agents:*"] },
    token: () => "secret-mixed",
  },
  {
    label: "typo triggers:raed",
    caller: { kind: "out-of-vocabulary", scopes: ["triggers:raed"] },
    token: () => "secret-typo",
  },
  { label: "sandboxed agent (*)", caller: { kind: "sandboxed" }, token: () => sandboxToken },
];

beforeAll(async () => {
  db = await createTestDatabase(inject("adminDatabaseUrl"));
  const tokens: Record<string, string[]> = {
    star: ["*"],
    "old-pipelines": ["pipelines:*"],
    mixed: ["triggers:read", "agents:*"],
    typo: ["triggers:raed"],
    "eval-runner": ["evals:write", "pipelines:invoke"],
  };
  for (const scope of SINGLE_SCOPES) tokens[tokenName(scope)] = [scope];
  api = await startApi(db.url, apiConfig({ tokens: tokensBlock(tokens) }));
  ids = await seedLineage(api.pool, { owner: "token:star" });
  // a team's sandboxed run (an outsider's is refused team knowledge whatever its scopes: issue 55)
  sandboxToken = (
    await issueRunToken(api.pool, {
      invocationId: ids.invocation,
      scopes: ["*"],
      sandboxed: true,
      expiresAt: new Date(Date.now() + 3_600_000),
      run: { outsider: false },
    })
  ).token;
});

afterAll(async () => {
  await api?.close();
  await db?.drop();
});

describe("scope matrix: every route × every caller", () => {
  for (const route of API_ROUTES) {
    for (const { label, caller, token, headers } of callers) {
      const allowed = expectedAllowed(route, caller);
      it(`${route.method} ${route.path} with ${label} is ${allowed ? "allowed" : "denied"}`, async () => {
        const response = await api.request(route.method, pathFor(route, ids), {
          ...(token ? { token: token() } : {}),
          ...(headers ? { headers } : {}),
          body: bodyFor(route),
        });
        const text = await response.text();
        expect(denied(response.status), `${response.status} ${text}`).toBe(!allowed);
        if (!allowed && caller.kind === "none") expect(response.status).toBe(401);
        if (!allowed && caller.kind !== "none") expect(response.status).toBe(403);
        if (token) expect(text).not.toContain(token());
      });
    }
  }
});

describe("local-install rule", () => {
  it("a loopback bind with no auth.tokens needs no token on any route", async () => {
    const local = await startApi(db.url, apiConfig(null, "127.0.0.1"));
    try {
      for (const route of API_ROUTES) {
        const response = await local.request(route.method, pathFor(route, ids), { body: bodyFor(route) });
        expect(denied(response.status), `${route.method} ${route.path}: ${response.status}`).toBe(false);
      }
      const whoami = await (await local.request("GET", "/whoami")).json();
      expect(whoami).toMatchObject({ owner: "local", scopes: ["*"], via: "local" });
    } finally {
      await local.close();
    }
  });

  it("bound off the machine with no tokens, only the loopback client is served without a token", async () => {
    const exposed = await startApi(db.url, apiConfig(null, "0.0.0.0"));
    try {
      for (const route of API_ROUTES) {
        const path = pathFor(route, ids);
        const remote = await exposed.request(route.method, path, {
          body: bodyFor(route),
          headers: VIA_PROXY,
        });
        expect(remote.status, `${route.method} ${route.path} through a proxy`).toBe(401);
        const local = await exposed.request(route.method, path, { body: bodyFor(route) });
        expect(denied(local.status), `${route.method} ${route.path} on loopback: ${local.status}`).toBe(
          false,
        );
      }
      // `/` and `/health` stay open
      expect((await exposed.request("GET", "/health", { headers: VIA_PROXY })).status).toBe(200);
      expect((await exposed.request("GET", "/", { headers: VIA_PROXY })).status).toBe(200);
    } finally {
      await exposed.close();
    }
  });

  it("an out-of-vocabulary token does not stop the daemon from serving others", async () => {
    const response = await api.request("GET", "/triggers", { token: `secret-${tokenName("triggers:read")}` });
    expect(response.status).toBe(200);
  });
});

describe("removed routes", () => {
  for (const path of ["/events", "/events/stats", "/events/trg_abcdefgh", "/events/trg_abcdefgh/fields"]) {
    it(`GET ${path} answers 404 with or without a token`, async () => {
      expect((await api.request("GET", path, { token: "secret-star" })).status).toBe(404);
      expect((await api.request("GET", path)).status).toBe(404);
    });
  }
  it("POST /events is still the codehost alias (not the removed listing)", async () => {
    // no codehost source is configured here, so the alias refuses like any unverifiable webhook
    const response = await api.request("POST", "/events", { body: {} });
    expect(response.status).toBe(401);
  });
});
