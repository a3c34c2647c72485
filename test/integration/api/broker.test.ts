import { createServer, type Server } from "node:http";
import { exportJWK, exportSPKI, generateKeyPair, SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { API_ROUTES } from "../../../ingress/api/routes.ts";
import type { ConfigSnapshot } from "../../../shared/config/types.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { type ApiHarness, apiConfig, startApi } from "./support.ts";

const SHARED_SECRET = "broker-shared-secret-of-enough-length-0123456789";
const ISSUER = "https://broker.test";
const AUDIENCE = "svc";

function hsToken(claims: Record<string, unknown>, secret = SHARED_SECRET): Promise<string> {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: "HS256" })
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setSubject("ci-bot")
    .setIssuedAt()
    .setExpirationTime("5m")
    .sign(new TextEncoder().encode(secret));
}

function withBroker(broker: NonNullable<ConfigSnapshot["auth"]>["broker"]): ConfigSnapshot {
  return apiConfig({ tokens: {}, broker });
}

function pathOf(path: string): string {
  return path.replace(":name", "plain").replace(":id", "trg_aaaaaaaaaaaaaaaaaaaa");
}

let db: TestDatabase;
let api: ApiHarness;

beforeAll(async () => {
  db = await createTestDatabase(inject("adminDatabaseUrl"));
  api = await startApi(
    db.url,
    withBroker({ issuer: ISSUER, audience: AUDIENCE, secret: { kind: "inline", value: SHARED_SECRET } }),
  );
});

afterAll(async () => {
  await api?.close();
  await db?.drop();
});

describe("broker JWTs with a shared secret", () => {
  it("a space-delimited string scope grants exactly its scopes", async () => {
    const token = await hsToken({ scope: "triggers:read admin" });
    expect((await api.request("GET", "/triggers", { token })).status).toBe(200);
    expect((await api.request("GET", "/queue/status", { token })).status).toBe(200);
    expect((await api.request("GET", "/workloads", { token })).status).toBe(403);
    const whoami = (await (await api.request("GET", "/whoami", { token })).json()) as Record<string, unknown>;
    expect(whoami).toMatchObject({
      owner: "broker:ci-bot",
      via: "broker",
      scopes: ["triggers:read", "admin"],
    });
  });

  const malformed: [string, unknown][] = [
    ["an array", ["triggers:read", "admin"]],
    ["a number", 42],
    ["an object", { triggers: "read" }],
  ];
  for (const [label, claim] of malformed) {
    it(`${label} scope claim fails every request at the middleware`, async () => {
      const token = await hsToken({ scope: claim });
      for (const route of API_ROUTES) {
        const response = await api.request(route.method, pathOf(route.path), {
          token,
          body: route.method === "POST" ? {} : undefined,
        });
        const body = (await response.json()) as { error?: { code: string } };
        expect(response.status, `${route.method} ${route.path}`).toBe(401);
        expect(body.error?.code).toBe("invalid_scope_claim");
      }
    });
  }

  it("a JWT signed with another key, for another audience or expired is refused", async () => {
    const wrongKey = await hsToken({ scope: "*" }, "another-secret-another-secret-another-secret!!");
    const wrongAudience = await new SignJWT({ scope: "*" })
      .setProtectedHeader({ alg: "HS256" })
      .setIssuer(ISSUER)
      .setAudience("someone-else")
      .setExpirationTime("5m")
      .sign(new TextEncoder().encode(SHARED_SECRET));
    const expired = await new SignJWT({ scope: "*" })
      .setProtectedHeader({ alg: "HS256" })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setExpirationTime(Math.floor(Date.now() / 1000) - 600)
      .sign(new TextEncoder().encode(SHARED_SECRET));
    for (const token of [wrongKey, wrongAudience, expired]) {
      const response = await api.request("GET", "/triggers", { token });
      expect(response.status).toBe(401);
      expect(await response.text()).not.toContain(token);
    }
  });

  it("out-of-vocabulary scopes in a string claim are refused everywhere", async () => {
    const token = await hsToken({ scope: "triggers:read pipelines:*" });
    expect((await api.request("GET", "/triggers", { token })).status).toBe(403);
  });
});

describe("broker JWTs with a public key or a JWKS", () => {
  let jwks: Server;
  let jwksUrl: string;
  let privateKey: Awaited<ReturnType<typeof generateKeyPair>>["privateKey"];
  let pemApi: ApiHarness;
  let jwksApi: ApiHarness;

  beforeAll(async () => {
    const pair = await generateKeyPair("RS256", { extractable: true });
    privateKey = pair.privateKey;
    const jwk = { ...(await exportJWK(pair.publicKey)), kid: "k1", alg: "RS256", use: "sig" };
    jwks = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ keys: [jwk] }));
    });
    await new Promise<void>((resolve) => jwks.listen(0, "127.0.0.1", resolve));
    const address = jwks.address();
    if (typeof address !== "object" || !address) throw new Error("no jwks port");
    jwksUrl = `http://127.0.0.1:${address.port}/.well-known/jwks.json`;
    pemApi = await startApi(db.url, withBroker({ publicKey: await exportSPKI(pair.publicKey) }));
    jwksApi = await startApi(db.url, withBroker({ jwksUrl }));
  });

  afterAll(async () => {
    await pemApi?.close();
    await jwksApi?.close();
    await new Promise((resolve) => jwks?.close(resolve));
  });

  function rsToken(claims: Record<string, unknown>): Promise<string> {
    return new SignJWT(claims)
      .setProtectedHeader({ alg: "RS256", kid: "k1" })
      .setSubject("svc-ops")
      .setExpirationTime("5m")
      .sign(privateKey);
  }

  it("verifies against a PEM public key", async () => {
    expect(
      (await pemApi.request("GET", "/triggers", { token: await rsToken({ scope: "triggers:read" }) })).status,
    ).toBe(200);
    expect(
      (await pemApi.request("GET", "/triggers", { token: await rsToken({ scope: ["triggers:read"] }) }))
        .status,
    ).toBe(401);
  });

  it("verifies against a JWKS served over HTTP", async () => {
    expect(
      (await jwksApi.request("GET", "/triggers", { token: await rsToken({ scope: "triggers:read" }) }))
        .status,
    ).toBe(200);
    expect(
      (await jwksApi.request("GET", "/queue/status", { token: await rsToken({ scope: "triggers:read" }) }))
        .status,
    ).toBe(403);
    expect((await jwksApi.request("GET", "/triggers", { token: await rsToken({ scope: 7 }) })).status).toBe(
      401,
    );
  });
});
