import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { importSPKI, jwtVerify } from "jose";

/**
 * The App side of the fake GitHub: it knows Apps by their public keys, verifies App JWTs as GitHub
 * does (RS256, `iss` the App id, at most ten minutes between `iat` and `exp`, not expired), answers
 * `GET /app`, `GET /app/installations`, `GET /repos/{o}/{r}/installation` and issues installation
 * tokens (`POST /app/installations/{id}/access_tokens`, honouring `repositories`) that expire after
 * `tokenLifetimeMs`. An installation carries its `permissions` and `events` (all svc needs unless
 * the spec says otherwise); `GET /app/hook/deliveries` lists the App's webhook deliveries newest
 * first (fake-github-hooks.ts makes them), 404 for an App without a webhook. Repo routes accept an
 * installation token only for its installation's repositories (404, as GitHub hides what a token
 * cannot see) and only until it expires (401).
 */
export interface FakeAppSpec {
  id: number;
  slug: string;
  /** SPKI PEM of the App's public key */
  publicKey: string;
  /** `tokenLifetimeMs`: how long its tokens live; default an hour, as on GitHub */
  installations: {
    id: number;
    account: string;
    repos: string[];
    tokenLifetimeMs?: number;
    /** what the installation's owner accepted; default INSTALLATION_PERMISSIONS */
    permissions?: Record<string, string>;
    /** the events it is subscribed to; default INSTALLATION_EVENTS */
    events?: string[];
  }[];
  /** the App's webhook: where deliveries go, signed with `secret`; absent: the App has none */
  webhook?: { url: string; secret: string };
  /** its deliveries, oldest first, as fake-github-hooks.ts's deliver() appends them */
  deliveries?: HookDelivery[];
}

/** One delivery to an App's webhook as `GET /app/hook/deliveries` lists it (fake-github-hooks.ts makes them). */
export interface HookDelivery {
  id: number;
  guid: string;
  delivered_at: string;
  redelivery: boolean;
  duration: number;
  status: string;
  status_code: number;
  event: string;
  action: string | null;
  installation_id: number | null;
  repository_id: number | null;
  throttled_at: string | null;
}

export interface Exchange {
  appId: number;
  installationId: number;
  repositories: string[] | undefined;
  permissions: Record<string, string> | undefined;
  token: string;
  expiresAt: string;
}

interface Issued {
  app: FakeAppSpec;
  installationId: number;
  repos: string[];
  permissions: Record<string, string>;
  expiresAt: number;
}

const DOCS = "https://docs.github.com/rest";
const INSTALLATION_PERMISSIONS = {
  contents: "read",
  pull_requests: "write",
  issues: "write",
  checks: "read",
  metadata: "read",
};
const INSTALLATION_EVENTS = ["pull_request", "issue_comment", "pull_request_review_comment", "push"];

export interface FakeAppHost {
  exchanges: Exchange[];
  /** tokens issued so far, whoever holds them */
  issued: Map<string, Issued>;
  /** answers an `/app...` or `.../installation` request; false when the path is not one of those */
  handle(req: IncomingMessage, path: string, body: unknown, res: ServerResponse): Promise<boolean>;
  /** the bot login an installation token acts as on `path`, or a refusal */
  login(
    token: string,
    method: string,
    path: string,
  ): { login: string } | { status: 401 | 403 | 404; message: string } | undefined;
}

export function fakeAppHost(apps: FakeAppSpec[]): FakeAppHost {
  const exchanges: Exchange[] = [];
  const issued = new Map<string, Issued>();
  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { "content-type": "application/json; charset=utf-8" });
    res.end(JSON.stringify(body));
  };
  const installationObject = (app: FakeAppSpec, inst: FakeAppSpec["installations"][number]) => ({
    id: inst.id,
    app_id: app.id,
    app_slug: app.slug,
    account: { login: inst.account, type: "Organization" },
    target_type: "Organization",
    repository_selection: "selected",
    permissions: inst.permissions ?? INSTALLATION_PERMISSIONS,
    events: inst.events ?? INSTALLATION_EVENTS,
    access_tokens_url: `/app/installations/${inst.id}/access_tokens`,
  });

  /** The App a request's JWT proves, or the reason GitHub would give. */
  const verify = async (authorization: string | undefined): Promise<FakeAppSpec | string> => {
    const jwt = /^bearer (.+)$/i.exec(authorization ?? "")?.[1];
    if (jwt?.split(".").length !== 3) return "A JSON web token could not be decoded";
    let issuer: string | undefined;
    try {
      issuer = JSON.parse(Buffer.from(jwt.split(".")[1]!, "base64url").toString("utf8")).iss;
    } catch {
      return "A JSON web token could not be decoded";
    }
    const app = apps.find((candidate) => String(candidate.id) === String(issuer));
    if (!app) return `Integration not found`;
    try {
      const key = await importSPKI(app.publicKey, "RS256");
      // GitHub takes the App's id as a number (Octokit's signer) or a string
      const { payload } = await jwtVerify(jwt, key, { algorithms: ["RS256"] });
      if (String(payload.iss) !== String(app.id)) return "Integration not found";
      if (typeof payload.iat !== "number" || typeof payload.exp !== "number")
        return "Missing 'issued at' time claim ('iat') must be an Integer";
      if (payload.exp - payload.iat > 600) return "'Expiration time' claim ('exp') is too far in the future";
      return app;
    } catch {
      return "A JSON web token could not be decoded";
    }
  };

  return {
    exchanges,
    issued,
    async handle(req, path, body, res) {
      const installationOf = /^\/repos\/([^/]+)\/([^/]+)\/installation$/.exec(path);
      const appRoute = /^\/app(?:\/installations(?:\/(\d+)\/access_tokens)?)?$/.exec(path);
      const hookRoute = path === "/app/hook/deliveries";
      if (!installationOf && !appRoute && !hookRoute) return false;
      const app = await verify(req.headers.authorization);
      if (typeof app === "string") {
        send(res, 401, { message: app, documentation_url: DOCS, status: "401" });
        return true;
      }
      if (installationOf) {
        const repo = `${installationOf[1]}/${installationOf[2]}`;
        const inst = app.installations.find((entry) => entry.repos.includes(repo));
        if (!inst)
          send(res, 404, {
            message: "Not Found",
            documentation_url: `${DOCS}/apps/apps#get-a-repository-installation-for-the-authenticated-app`,
            status: "404",
          });
        else send(res, 200, installationObject(app, inst));
        return true;
      }
      if (path === "/app" && req.method === "GET") {
        send(res, 200, {
          id: app.id,
          slug: app.slug,
          name: app.slug,
          owner: { login: "acme", type: "Organization" },
        });
        return true;
      }
      if (hookRoute) {
        if (!app.webhook || req.method !== "GET") {
          send(res, 404, {
            message: "Not Found",
            documentation_url: `${DOCS}/apps/webhooks#list-deliveries-for-an-app-webhook`,
            status: "404",
          });
          return true;
        }
        const perPage = Math.min(
          Number(new URL(req.url ?? "/", "http://x").searchParams.get("per_page") ?? 30),
          100,
        );
        send(res, 200, [...(app.deliveries ?? [])].reverse().slice(0, perPage));
        return true;
      }
      if (path === "/app/installations" && req.method === "GET") {
        send(
          res,
          200,
          app.installations.map((inst) => installationObject(app, inst)),
        );
        return true;
      }
      const inst = app.installations.find((entry) => String(entry.id) === appRoute?.[1]);
      if (!inst || req.method !== "POST") {
        send(res, 404, { message: "Not Found", documentation_url: DOCS, status: "404" });
        return true;
      }
      const requested = (body as { repositories?: unknown } | undefined)?.repositories;
      const names = Array.isArray(requested) ? requested.map(String) : undefined;
      const owned = inst.repos.map((repo) => repo.split("/")[1]!);
      if (names?.some((name) => !owned.includes(name))) {
        send(res, 422, {
          message:
            "There is at least one repository that does not exist or is not accessible to the parent installation.",
          documentation_url: DOCS,
          status: "422",
        });
        return true;
      }
      const token = `ghs_${randomBytes(18).toString("base64url")}`;
      const expiresAt = new Date(Date.now() + (inst.tokenLifetimeMs ?? 3_600_000));
      const asked = (body as { permissions?: Record<string, string> } | undefined)?.permissions;
      const permissions = asked ?? inst.permissions ?? INSTALLATION_PERMISSIONS;
      const repos = names ? inst.repos.filter((repo) => names.includes(repo.split("/")[1]!)) : inst.repos;
      issued.set(token, { app, installationId: inst.id, repos, permissions, expiresAt: expiresAt.getTime() });
      // GitHub states expires_at to the second
      const stated = `${expiresAt.toISOString().slice(0, 19)}Z`;
      exchanges.push({
        appId: app.id,
        installationId: inst.id,
        repositories: names,
        permissions: asked,
        token,
        expiresAt: stated,
      });
      send(res, 201, {
        token,
        expires_at: stated,
        permissions,
        repository_selection: names ? "selected" : "all",
      });
      return true;
    },
    login(token, method, path) {
      const entry = issued.get(token);
      if (!entry) return undefined;
      if (entry.expiresAt <= Date.now()) return { status: 401, message: "Bad credentials" };
      const repo = /^\/repos\/([^/]+)\/([^/]+)/.exec(path);
      if (repo && !entry.repos.includes(`${repo[1]}/${repo[2]}`))
        return { status: 404, message: "Not Found" };
      // a write needs the write permission of what it writes (comments: issues or pull requests)
      const area = /\/pulls\//.test(path) ? "pull_requests" : "issues";
      if (method !== "GET" && method !== "HEAD" && entry.permissions[area] !== "write")
        return { status: 403, message: "Resource not accessible by integration" };
      return { login: `${entry.app.slug}[bot]` };
    },
  };
}
