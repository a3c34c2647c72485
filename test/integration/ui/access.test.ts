import { compileErrors, validate } from "@readme/openapi-parser";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { API_ROUTES } from "../../../ingress/api/routes.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import {
  type ApiHarness,
  apiConfig,
  type SeededLineage,
  seedLineage,
  startApi,
  tokensBlock,
  VIA_PROXY,
} from "../api/support.ts";

/** Who may open the /ui pages and how, and what the cookie does NOT open; /openapi.json as served. */
let db: TestDatabase;
let secured: ApiHarness;
let local: ApiHarness;
let seeded: SeededLineage;

beforeAll(async () => {
  db = await createTestDatabase(inject("adminDatabaseUrl"));
  secured = await startApi(
    db.url,
    apiConfig({
      tokens: tokensBlock({ reader: ["triggers:read"], hooks: ["pipelines:invoke"], evals: ["evals:write"] }),
    }),
  );
  local = await startApi(db.url, apiConfig(null));
  seeded = await seedLineage(secured.pool, { failed: true });
});

afterAll(async () => {
  await secured?.close();
  await local?.close();
  await db?.drop();
});

const page = (harness: ApiHarness, path: string, headers: Record<string, string> = {}) =>
  fetch(harness.url + path, { headers, redirect: "manual" });

const login = (harness: ApiHarness, token: string, origin: string | undefined) =>
  fetch(`${harness.url}/ui/login`, {
    method: "POST",
    redirect: "manual",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      ...(origin ? { origin } : {}),
    },
    body: new URLSearchParams({ token, next: `/ui/trace/${seeded.trigger}` }).toString(),
  });

describe("/ui access", () => {
  it("without credentials, through a proxy, answers 401 with the login form", async () => {
    const response = await page(secured, `/ui/trace/${seeded.trigger}`, VIA_PROXY);
    expect(response.status).toBe(401);
    expect(await response.text()).toContain('action="/ui/login"');
  });

  it("without credentials on loopback, opens the pages even with tokens configured", async () => {
    expect((await page(secured, `/ui/trace/${seeded.trigger}`)).status).toBe(200);
  });

  it("accepts the Authorization header and shows the diagnostic", async () => {
    const response = await page(secured, `/ui/trace/${seeded.trigger}`, {
      authorization: "Bearer secret-reader",
    });
    expect(response.status).toBe(200);
    expect(await response.text()).toContain("agent_timeout");
  });

  it("refuses a token without triggers:read", async () => {
    expect((await page(secured, "/ui/triggers", { authorization: "Bearer secret-hooks" })).status).toBe(403);
    expect((await login(secured, "secret-hooks", secured.url)).status).toBe(403);
  });

  it("opens /ui/evals to evals:write alone: that token signs in, but not into the trigger pages", async () => {
    expect((await page(secured, "/ui/evals", { authorization: "Bearer secret-reader" })).status).toBe(403);
    const evals = await page(secured, "/ui/evals", { authorization: "Bearer secret-evals" });
    expect(evals.status).toBe(200);
    expect(evals.headers.get("content-security-policy")).toContain("script-src 'none'");
    expect((await page(secured, "/ui/triggers", { authorization: "Bearer secret-evals" })).status).toBe(403);
    expect((await login(secured, "secret-evals", secured.url)).status).toBe(303);
  });

  it("logs in from its own origin into an HttpOnly, SameSite=Strict cookie that opens the pages", async () => {
    const response = await login(secured, "secret-reader", secured.url);
    expect(response.status).toBe(303);
    expect(response.headers.get("location")).toBe(`/ui/trace/${seeded.trigger}`);
    const cookie = response.headers.get("set-cookie") ?? "";
    expect(cookie).toMatch(/^svc_ui_token=secret-reader; Path=\/ui; HttpOnly; SameSite=Strict$/);
    const opened = await page(secured, `/ui/trace/${seeded.trigger}`, { cookie: cookie.split(";")[0]! });
    expect(opened.status).toBe(200);
  });

  it("refuses a login form posted from another origin or without one (CSRF)", async () => {
    for (const origin of ["http://evil.example", undefined]) {
      const response = await login(secured, "secret-reader", origin);
      expect(response.status).toBe(403);
      expect(response.headers.get("set-cookie")).toBeNull();
    }
  });

  it("a wrong token in the form answers 401 and sets no cookie", async () => {
    const response = await login(secured, "not-a-token", secured.url);
    expect(response.status).toBe(401);
    expect(response.headers.get("set-cookie")).toBeNull();
  });

  it("the cookie opens no API route: only /ui reads it", async () => {
    const response = await page(secured, `/trace/${seeded.trigger}`, {
      ...VIA_PROXY,
      cookie: "svc_ui_token=secret-reader",
    });
    expect(response.status).toBe(401);
  });

  it("works on a local install without a token", async () => {
    const response = await page(local, `/ui/trace/${seeded.trigger}`);
    expect(response.status).toBe(200);
    expect((await page(local, "/ui/triggers?status=error&code=agent_timeout")).status).toBe(200);
  });

  it("sends a CSP without inline script and serves its stylesheet", async () => {
    const response = await page(local, "/ui/triggers");
    const csp = response.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'none'");
    expect(csp).not.toContain("unsafe-inline");
    const style = await page(local, "/ui/style.css");
    expect(style.headers.get("content-type")).toContain("text/css");
  });

  it("lists an invocation's output deliveries with a link to what was posted, and escapes them", async () => {
    const lineage = await seedLineage(local.pool);
    await local.pool.query(
      `INSERT INTO svc.output_deliveries (invocation_id, output_key, handler, status, remote_url, attempts)
       VALUES ($1, 'review', 'codehost.review', 'sent', 'https://github.example/acme/widgets/pull/7#pullrequestreview-9', 1),
              ($1, 'notify', 'chat.message', 'failed', 'javascript:alert(1)', 3)`,
      [lineage.invocation],
    );
    const body = await (await page(local, `/ui/trace/${lineage.trigger}`)).text();
    expect(body).toContain(
      '<a href="https://github.example/acme/widgets/pull/7#pullrequestreview-9" rel="noreferrer">',
    );
    expect(body).toContain("<td>codehost.review</td><td>sent</td>");
    expect(body).toContain("<td>chat.message</td><td>failed</td>");
    expect(body).not.toContain('href="javascript:');
  });

  it("escapes what it shows: a filter value comes back as text", async () => {
    const response = await page(local, `/ui/triggers?code=${encodeURIComponent('"><script>x</script>')}`);
    expect(response.status).toBe(400);
    const text = await response.text();
    expect(text).not.toContain("<script>x</script>");
    expect(text).toContain("&quot;&gt;&lt;script&gt;x&lt;/script&gt;");
  });
});

describe("GET /openapi.json", () => {
  it("needs no token, validates, and lists every route of the table with its scope", async () => {
    const response = await page(secured, "/openapi.json");
    expect(response.status).toBe(200);
    const document = (await response.json()) as {
      paths: Record<string, Record<string, { "x-svc-scope"?: string }>>;
    };
    const result = await validate(structuredClone(document) as never);
    expect(result.valid ? "" : compileErrors(result)).toBe("");
    for (const route of API_ROUTES) {
      const path = route.path.replace(/:([A-Za-z_]+)/g, "{$1}");
      expect(document.paths[path]?.[route.method.toLowerCase()]?.["x-svc-scope"]).toBe(route.scope);
    }
  });
});
