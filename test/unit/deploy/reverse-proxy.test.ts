import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { DEFAULT_MAX_BODY_BYTES } from "../../../shared/config/daemon/webhooks.ts";
import { DEPLOY, findTool, reportMissingTool, runTool } from "./tools.ts";

const NGINX = join(DEPLOY, "nginx");
const SITES = ["compose.conf", "svc.conf"] as const;
const snippet = await readFile(join(NGINX, "svc-proxy.conf"), "utf8");
const sites = Object.fromEntries(
  await Promise.all(SITES.map(async (f) => [f, await readFile(join(NGINX, f), "utf8")] as const)),
) as Record<(typeof SITES)[number], string>;

/** Directives (comments stripped) as `name args` strings. */
function directives(text: string): string[] {
  return text
    .split("\n")
    .map((l) => l.replace(/#.*$/, "").trim())
    .filter((l) => l.endsWith(";"))
    .map((l) => l.slice(0, -1).replace(/\s+/g, " "));
}

/** The body of `location <match> { … }` (no nested blocks in these files). */
function location(text: string, match: string): string[] {
  const start = text.indexOf(`location ${match} {`);
  if (start < 0) throw new Error(`no location ${match}`);
  return directives(text.slice(start, text.indexOf("}", start)));
}

function bytes(size: string): number {
  const m = /^(\d+)([kmg]?)$/i.exec(size);
  if (!m) throw new Error(`size ${size}`);
  return (
    Number(m[1]) * { "": 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 }[m[2]!.toLowerCase() as "" | "k" | "m" | "g"]
  );
}

describe("reverse proxy (in-process)", () => {
  it("streams request bodies unmodified and forwards every client header", () => {
    const d = directives(snippet);
    expect(d).toContain("proxy_request_buffering off");
    expect(d).toContain("proxy_pass_request_body on");
    expect(d).toContain("proxy_pass_request_headers on");
    expect(d).toContain("proxy_http_version 1.1");
    // nothing that rewrites a body or a signed header
    expect(
      d.filter((x) => /^(proxy_set_body|sub_filter|charset|gunzip|proxy_hide_header)\b/.test(x)),
    ).toEqual([]);
    const set = d.filter((x) => x.startsWith("proxy_set_header ")).map((x) => x.split(" ")[1]);
    expect(set.sort()).toEqual(["Connection", "Host", "X-Forwarded-For", "X-Forwarded-Proto", "X-Real-IP"]);
    for (const header of [
      "Authorization",
      "X-Hub-Signature-256",
      "Linear-Signature",
      "X-GitHub-Event",
      "X-GitHub-Delivery",
      "Linear-Delivery",
      "Idempotency-Key",
    ]) {
      expect(snippet, `${header} is named in the comment that promises it`).toContain(header);
      expect(set).not.toContain(header);
    }
  });

  for (const name of SITES) {
    const text = sites[name];
    it(`${name}: forwards /webhooks/, /events, /health and the API with the URI unchanged`, () => {
      for (const match of ["/webhooks/", "= /events", "/"]) {
        const body = location(text, match);
        expect(body, match).toContain("include /etc/nginx/snippets/svc-proxy.conf");
        // no URI part after the upstream: nginx passes the request URI exactly as received
        expect(body, match).toContain("proxy_pass http://svc_ingress");
      }
      for (const match of ["/webhooks/", "= /events"]) {
        const size = location(text, match)
          .find((x) => x.startsWith("client_max_body_size "))!
          .split(" ")[1]!;
        expect(bytes(size)).toBeGreaterThanOrEqual(DEFAULT_MAX_BODY_BYTES);
      }
      // no other location could swallow an API route
      expect([...text.matchAll(/location ([^{]+)\{/g)].map((m) => m[1]!.trim())).toEqual([
        "/webhooks/",
        "= /events",
        "/",
      ]);
    });
  }

  it("compose.conf balances over exactly the ingress services of compose.yaml", async () => {
    const compose = parse(await readFile(join(DEPLOY, "compose.yaml"), "utf8"), { merge: true }) as {
      services: Record<string, { command?: string[] }>;
    };
    const ingress = Object.entries(compose.services)
      .filter(([, s]) => s.command?.[0] === "ingress")
      .map(([n]) => `${n}:7420`);
    const servers = directives(sites["compose.conf"])
      .filter((x) => x.startsWith("server "))
      .map((x) => x.split(" ")[1]);
    expect(servers.sort()).toEqual(ingress.sort());
    expect(directives(sites["compose.conf"])).toContain("listen 8080");
  });

  it("svc.conf forwards to the loopback ingress of the systemd unit", () => {
    expect(directives(sites["svc.conf"])).toContain("server 127.0.0.1:7420 max_fails=1 fail_timeout=5s");
  });
});

// nginx lives in /usr/sbin, which is not on every user's PATH
const nginxPath = findTool("nginx") ?? (existsSync("/usr/sbin/nginx") ? "/usr/sbin/nginx" : undefined);
const openssl = findTool("openssl");
if (!nginxPath) reportMissingTool("nginx", "nginx -t on deploy/nginx/*.conf");
else if (!openssl)
  reportMissingTool("openssl", "nginx -t on deploy/nginx/svc.conf (its TLS server needs a certificate)");

describe.skipIf(!nginxPath)("reverse proxy (nginx -t)", () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  function version(): [number, number, number] {
    const out = runTool(nginxPath!, ["-v"]).stderr;
    const m = /nginx\/(\d+)\.(\d+)\.(\d+)/.exec(out);
    if (!m) throw new Error(`nginx -v: ${out}`);
    return [Number(m[1]), Number(m[2]), Number(m[3])];
  }

  /**
   * Runs `nginx -t` on one site inside a throw-away prefix. Only what a test machine cannot have is
   * replaced: the compose service names (resolved at start-up) and, for svc.conf, the certificates.
   */
  async function check(site: (typeof SITES)[number]): Promise<{ status: number | null; stderr: string }> {
    const prefix = await mkdtemp(join(tmpdir(), "svc-nginx-"));
    dirs.push(prefix);
    await mkdir(join(prefix, "logs"));
    await writeFile(join(prefix, "svc-proxy.conf"), snippet);
    let text = sites[site].replaceAll("/etc/nginx/snippets/svc-proxy.conf", join(prefix, "svc-proxy.conf"));
    text = text.replace(/server ingress-\d+:7420/g, "server 127.0.0.1:7420");
    const [major, minor, patch] = version();
    // `server … resolve` in an upstream needs nginx 1.27.3 (the compose file runs nginx 1.28)
    if (major === 1 && (minor < 27 || (minor === 27 && patch < 3))) text = text.replaceAll(" resolve ", " ");
    text = text.replaceAll("/var/log/nginx/", `${prefix}/logs/`);
    if (site === "svc.conf") {
      const key = join(prefix, "key.pem");
      const cert = join(prefix, "cert.pem");
      const made = runTool(openssl!, [
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=svc.example.com",
        "-days",
        "1",
        "-keyout",
        key,
        "-out",
        cert,
      ]);
      expect(made.status, made.stderr).toBe(0);
      text = text
        .replace("/etc/letsencrypt/live/svc.example.com/fullchain.pem", cert)
        .replace("/etc/letsencrypt/live/svc.example.com/privkey.pem", key);
    }
    await writeFile(join(prefix, "site.conf"), text);
    await writeFile(
      join(prefix, "nginx.conf"),
      `pid ${prefix}/nginx.pid;\nerror_log stderr;\nevents {}\nhttp {\n  access_log off;\n  include ${prefix}/site.conf;\n}\n`,
    );
    return runTool(nginxPath!, ["-t", "-p", prefix, "-c", join(prefix, "nginx.conf")]);
  }

  for (const site of SITES) {
    it.skipIf(site === "svc.conf" && !openssl)(`nginx -t accepts ${site}`, async () => {
      const result = await check(site);
      expect(result.stderr).toMatch(/test is successful/);
      expect(result.stderr).not.toMatch(/\[(emerg|alert|crit|error)\]/);
      expect(result.status).toBe(0);
    });
  }
});
