import { generateKeyPairSync, randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";

/**
 * The manifest side of a loopback GitHub (GitHub's "Registering a GitHub App from a manifest"), on
 * one origin that is both the web and the API, as `codehost.api_url: http://127.0.0.1:<port>` makes
 * it for svc. The web form `POST /settings/apps/new?state=…` (or
 * `/organizations/<org>/settings/apps/new?state=…`) takes the `manifest` field, records it, registers
 * the App and sends the browser to the manifest's `redirect_url` with a code and the state, as GitHub
 * does once its person presses "Create GitHub App" (this fake asks nothing). The API
 * `POST /app-manifests/{code}/conversions` answers 201 with the App (id, slug, html_url, owner,
 * client_id, client_secret, webhook_secret, pem) once per code, and 404 `{"message":"Not Found"}`
 * after, or for a code it never issued.
 */
export interface PostedManifest {
  /** the organisation of `/organizations/<org>/settings/apps/new`; undefined for the user's own */
  org: string | undefined;
  state: string | null;
  manifest: Record<string, unknown>;
  /** the code the browser was sent back with */
  code: string;
}

export interface RegisteredApp {
  id: number;
  slug: string;
  name: string;
  owner: string;
  htmlUrl: string;
  pem: string;
  webhookSecret: string;
  clientSecret: string;
}

export interface FakeGitHubManifest {
  url: string;
  posted: PostedManifest[];
  /** every `POST /app-manifests/{code}/conversions`, with the status it was answered */
  conversions: { code: string; status: number }[];
  /** the App each code registered */
  apps: Map<string, RegisteredApp>;
  /** registers an App for `manifest` as the web form would, without a browser; its code */
  issueCode(manifest: Record<string, unknown>, org?: string): string;
  /** answers one of its routes; false for any other request (to compose with another fake) */
  handle(req: IncomingMessage, res: ServerResponse): boolean;
  close(): Promise<void>;
}

const DOCS = "https://docs.github.com/rest/apps/apps#create-a-github-app-from-a-manifest";
const USER = "octo-operator";

export async function startFakeGitHubManifest(): Promise<FakeGitHubManifest> {
  const posted: PostedManifest[] = [];
  const conversions: { code: string; status: number }[] = [];
  const apps = new Map<string, RegisteredApp>();
  const used = new Set<string>();
  let nextId = 900_001;
  let base = "";

  const register = (manifest: Record<string, unknown>, org: string | undefined): string => {
    const name = typeof manifest.name === "string" && manifest.name ? manifest.name : `app-${nextId}`;
    const slug = name
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, "-")
      .replace(/^-|-$/g, "");
    const { privateKey } = generateKeyPairSync("rsa", {
      modulusLength: 2048,
      // GitHub hands out PKCS#1 ("BEGIN RSA PRIVATE KEY")
      privateKeyEncoding: { type: "pkcs1", format: "pem" },
      publicKeyEncoding: { type: "spki", format: "pem" },
    });
    const code = randomBytes(10).toString("hex");
    apps.set(code, {
      id: nextId++,
      slug,
      name,
      owner: org ?? USER,
      htmlUrl: `${base}/apps/${slug}`,
      pem: privateKey,
      webhookSecret: randomBytes(20).toString("hex"),
      clientSecret: randomBytes(20).toString("hex"),
    });
    return code;
  };

  const sendJson = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { "content-type": "application/json; charset=utf-8" });
    res.end(JSON.stringify(body));
  };

  const readText = async (req: IncomingMessage) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString("utf8");
  };

  const webForm = async (req: IncomingMessage, res: ServerResponse, url: URL, org: string | undefined) => {
    const form = new URLSearchParams(await readText(req));
    let manifest: Record<string, unknown>;
    try {
      manifest = JSON.parse(form.get("manifest") ?? "");
    } catch {
      res.writeHead(422, { "content-type": "text/html" });
      res.end("<p>Invalid GitHub App manifest</p>");
      return;
    }
    const redirect = typeof manifest.redirect_url === "string" ? manifest.redirect_url : "";
    if (!/^https?:\/\//.test(redirect)) {
      res.writeHead(422, { "content-type": "text/html" });
      res.end("<p>The manifest has no redirect_url</p>");
      return;
    }
    const code = register(manifest, org);
    const state = url.searchParams.get("state");
    posted.push({ org, state, manifest, code });
    const back = new URL(redirect);
    back.searchParams.set("code", code);
    if (state !== null) back.searchParams.set("state", state);
    res.writeHead(302, { location: back.toString() });
    res.end();
  };

  const convert = (res: ServerResponse, code: string) => {
    const app = apps.get(code);
    if (!app || used.has(code)) {
      conversions.push({ code, status: 404 });
      sendJson(res, 404, { message: "Not Found", documentation_url: DOCS, status: "404" });
      return;
    }
    used.add(code);
    conversions.push({ code, status: 201 });
    const manifest = posted.find((entry) => entry.code === code)?.manifest ?? {};
    const now = new Date().toISOString();
    sendJson(res, 201, {
      id: app.id,
      slug: app.slug,
      node_id: Buffer.from(`Integration${app.id}`).toString("base64"),
      owner: { login: app.owner, id: 4_000_001, type: app.owner === USER ? "User" : "Organization" },
      name: app.name,
      description: manifest.description ?? "",
      external_url: manifest.url ?? "",
      html_url: app.htmlUrl,
      created_at: now,
      updated_at: now,
      permissions: manifest.default_permissions ?? {},
      events: manifest.default_events ?? [],
      client_id: `Iv1.${randomBytes(8).toString("hex")}`,
      client_secret: app.clientSecret,
      webhook_secret: app.webhookSecret,
      pem: app.pem,
    });
  };

  const handle = (req: IncomingMessage, res: ServerResponse): boolean => {
    const url = new URL(req.url ?? "/", "http://x");
    const conversion = /^\/app-manifests\/([^/]+)\/conversions$/.exec(url.pathname);
    if (req.method === "POST" && conversion) {
      convert(res, decodeURIComponent(conversion[1]!));
      return true;
    }
    const organisation = /^\/organizations\/([^/]+)\/settings\/apps\/new$/.exec(url.pathname);
    if (req.method === "POST" && (url.pathname === "/settings/apps/new" || organisation)) {
      void webForm(req, res, url, organisation ? decodeURIComponent(organisation[1]!) : undefined);
      return true;
    }
    return false;
  };

  const server: Server = createServer((req, res) => {
    if (!handle(req, res))
      sendJson(res, 404, { message: "Not Found", documentation_url: DOCS, status: "404" });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  base = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  return {
    url: base,
    posted,
    conversions,
    apps,
    issueCode: (manifest, org) => register(manifest, org),
    handle,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
