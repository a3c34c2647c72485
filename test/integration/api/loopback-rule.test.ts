import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { ConfigSnapshot } from "../../../shared/config/types.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { waitFor } from "../../support/wait-for.ts";
import { type ApiHarness, apiConfig, startApi, tokensBlock, VIA_PROXY } from "./support.ts";

/**
 * The contract's "the loopback client keeps `*`" with `auth.tokens` configured: a loopback peer
 * without forwarding headers acts as `local` with `*`; the same request carrying any forwarding
 * header (what a reverse proxy on this host sends) needs a token. `server.trusted_proxies` decides
 * only which address the request log names.
 */
let db: TestDatabase;
let api: ApiHarness;

function withProxies(config: ConfigSnapshot, trustedProxies: string[]): ConfigSnapshot {
  return { ...config, server: { ...config.server, trustedProxies } };
}

const TOKENS = { auth: { tokens: tokensBlock({ reader: ["triggers:read"] }) } } as const;

beforeAll(async () => {
  db = await createTestDatabase(inject("adminDatabaseUrl"));
  api = await startApi(db.url, withProxies(apiConfig(TOKENS.auth), ["127.0.0.1", "198.51.100.0/24"]));
});

afterAll(async () => {
  await api?.close();
  await db?.drop();
});

/** The `client` of the request log line for `path`, once the line is written. */
async function loggedClient(harness: ApiHarness, path: string): Promise<string> {
  return waitFor(async () => {
    const lines = harness
      .logText()
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const line = lines.find((entry) => entry.event === "http.request" && entry.route === path);
    return line ? String(line.client) : undefined;
  }, `the request line of ${path}`);
}

describe("the loopback rule with auth.tokens configured", () => {
  it("an anonymous loopback client acts as local with *", async () => {
    const response = await api.request("GET", "/whoami");
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ owner: "local", scopes: ["*"], via: "local" });
    expect((await api.request("GET", "/queue/status")).status).toBe(200);
  });

  const forwarding: [string, string][] = [
    ["x-forwarded-for", "203.0.113.7"],
    ["forwarded", "for=203.0.113.7;proto=https"],
    ["x-real-ip", "203.0.113.7"],
  ];
  for (const [header, value] of forwarding) {
    it(`an anonymous request carrying ${header} gets 401`, async () => {
      const response = await api.request("GET", "/whoami", { headers: { [header]: value } });
      expect(response.status).toBe(401);
      expect(await response.json()).toMatchObject({ error: { code: "unauthenticated" } });
    });
  }

  it("an empty X-Forwarded-For still marks the request as forwarded", async () => {
    const response = await api.request("GET", "/whoami", { headers: { "x-forwarded-for": "" } });
    expect(response.status).toBe(401);
  });

  it("a forwarded request with a valid token acts as that token, not as local", async () => {
    const response = await api.request("GET", "/whoami", { token: "secret-reader", headers: VIA_PROXY });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ owner: "token:reader", scopes: ["triggers:read"] });
    expect(
      (await api.request("GET", "/queue/status", { token: "secret-reader", headers: VIA_PROXY })).status,
    ).toBe(403);
  });

  it("a token sent on loopback is checked, not ignored: a wrong one gets 401", async () => {
    expect((await api.request("GET", "/whoami", { token: "secret-wrong" })).status).toBe(401);
  });
});

describe("server.trusted_proxies", () => {
  it("names the forwarded-for address when the peer is a trusted proxy, walking past trusted hops", async () => {
    await api.request("GET", "/triggers", { headers: { "x-forwarded-for": "203.0.113.7, 198.51.100.2" } });
    expect(await loggedClient(api, "/triggers")).toBe("203.0.113.7");
  });

  it("stops at the first address that is not a trusted proxy", async () => {
    await api.request("GET", "/schedules", { headers: { "x-forwarded-for": "203.0.113.7, 192.0.2.9" } });
    expect(await loggedClient(api, "/schedules")).toBe("192.0.2.9");
  });

  it("an untrusted peer's X-Forwarded-For is not believed, and is still no loopback", async () => {
    const plain = await startApi(db.url, apiConfig(TOKENS.auth));
    try {
      const response = await plain.request("GET", "/triggers", {
        headers: { "x-forwarded-for": "203.0.113.7" },
      });
      expect(response.status).toBe(401);
      expect(await loggedClient(plain, "/triggers")).toMatch(/^(::ffff:)?127\.0\.0\.1$/);
    } finally {
      await plain.close();
    }
  });
});
