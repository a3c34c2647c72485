import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { readGithubSetup } from "../../../db/github-setup.ts";
import { readSecrets } from "../../../db/secrets.ts";
import { createInstanceKey, readInstanceKey } from "../../../shared/secrets/instance-key.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { freePort } from "../../support/free-port.ts";
import { runSvc } from "../ingress/processes.ts";
import { type FakeGitHubManifest, startFakeGitHubManifest } from "../outputs/fake-github-manifest.ts";
import { PR_PAYLOAD, postSignedPullRequest } from "../outputs/pull-request.ts";
import { type RoleProcess, startIngress, writeConfigDir } from "../worker/processes.ts";
import { CHROMIUM, hasChromium, warnWithoutChromium } from "./support.ts";

/**
 * `svc setup github` end to end: the real CLI and ingress processes, a loopback GitHub answering the
 * manifest form and `POST /app-manifests/{code}/conversions` (once per code), and Debian's Chromium
 * pressing the page's button. Skipped, and says so, where /usr/bin/chromium is absent.
 */
warnWithoutChromium("test/e2e/ui/setup-github.test.ts");

const ROOT = join(import.meta.dirname, "../../..");
const NODE = join(ROOT, "node_modules/.bin/node");
const ADMIN = "e2e-setup-admin-token";
const READER = "e2e-setup-reader-token";
const PERMISSIONS = {
  contents: "read",
  pull_requests: "write",
  issues: "write",
  checks: "read",
  metadata: "read",
};
const EVENTS = ["pull_request", "issue_comment", "pull_request_review_comment", "push"];
const KEPT_COMMENT = "# operator's note: keep this comment where it is";

let db: TestDatabase;
let pool: pg.Pool;
let github: FakeGitHubManifest;
let dir: string;
let port: number;
let publicUrl: string;
let env: Record<string, string>;
let ingress: RoleProcess;
let browser: BrowserContext;
let profile: string;
/** every command started, so a failed test leaves none waiting */
const clis: Cli[] = [];

function daemonYaml(): string {
  return `${KEPT_COMMENT}
server:
  host: 127.0.0.1
  port: ${port}                 # aligned comment, as operators write them
  public_url: ${publicUrl}
auth:
  tokens:
    admin: { scopes: [admin], secret: ${ADMIN} }
    reader: { scopes: [triggers:read], secret: ${READER} }
webhooks:
  sources:
    deploy: { verify: bearer, secret: e2e-deploy-token }   # CI's hook
targets:
  local:
    runtime: command
    command: ["cat"]
    timeout: 1m
ask:
  targets: [local]
codehost:
  api_url: ${github.url}   # the loopback GitHub: web and API on one origin
`;
}

interface Cli {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** resolves with stdout once it contains `text` */
  waitFor(text: string | RegExp): Promise<string>;
  exited: Promise<number | null>;
}

/** `svc setup github` as an operator runs it, its output read while it waits. */
function setupGithub(args: string[] = []): Cli {
  const child = spawn(NODE, [join(ROOT, "bin/svc.js"), "setup", "github", "--dir", dir, ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  const waiters = new Set<() => void>();
  child.stdout!.on("data", (chunk) => {
    stdout += chunk;
    for (const wake of waiters) wake();
  });
  child.stderr!.on("data", (chunk) => (stderr += chunk));
  const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  const cli: Cli = {
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    waitFor: (text) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const found = typeof text === "string" ? stdout.includes(text) : text.test(stdout);
          if (found) {
            waiters.delete(check);
            clearTimeout(timer);
            resolve(stdout);
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`svc setup github never printed ${text}:\n${stdout}\n${stderr}`));
        }, 60_000);
        waiters.add(check);
        void exited.then(() => {
          if (waiters.has(check)) {
            waiters.delete(check);
            clearTimeout(timer);
            reject(new Error(`svc setup github exited before printing ${text}:\n${stdout}\n${stderr}`));
          }
        });
        check();
      }),
  };
  clis.push(cli);
  return cli;
}

/** The setup page's address as the command printed it. */
async function pageAddress(cli: Cli): Promise<string> {
  const out = await cli.waitFor("Waiting for GitHub");
  return /^ {2}(http:\/\/\S+\/ui\/setup\/github)$/m.exec(out)![1]!;
}

async function secretRows(): Promise<{ name: string; ciphertext: Buffer; updated_at: Date }[]> {
  const { rows } = await pool.query(
    "SELECT name, ciphertext, updated_at FROM svc.secrets WHERE name = ANY($1::text[]) ORDER BY name",
    [["codehost/app-private-key", "webhook/github"]],
  );
  return rows;
}

/** The page loaded in Chromium and the state its form carries to GitHub. */
async function openSetupPage(url: string): Promise<{ page: Page; state: string }> {
  const page = await browser.newPage();
  const response = await page.goto(url);
  expect(response!.status()).toBe(200);
  const action = await page.getAttribute("form#create-app", "action");
  return { page, state: new URL(action!).searchParams.get("state")! };
}

beforeAll(async () => {
  if (!hasChromium) return;
  db = await createTestDatabase(inject("adminDatabaseUrl"));
  pool = new pg.Pool({ connectionString: db.url, max: 2 });
  github = await startFakeGitHubManifest();
  port = await freePort();
  publicUrl = `http://127.0.0.1:${port}`;
  dir = await writeConfigDir({});
  await writeFile(join(dir, "daemon.yaml"), daemonYaml());
  await createInstanceKey(join(dir, "instance.key"));
  env = { SVC_CONFIG_DIR: dir, SVC_DATABASE_URL: db.url, SVC_DAEMON_URL: publicUrl };
  ({ role: ingress } = await startIngress({ ...env, SVC_PORT: String(port) }));
  profile = await mkdtemp(join(tmpdir(), "svc-chromium-"));
  browser = await launchBrowser();
}, 120_000);

function launchBrowser(): Promise<BrowserContext> {
  return chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--no-first-run",
      "--disable-background-networking",
    ],
  });
}

afterAll(async () => {
  for (const cli of clis)
    if (cli.child.exitCode === null && cli.child.signalCode === null) cli.child.kill("SIGKILL");
  await browser?.close();
  if (profile) await rm(profile, { recursive: true, force: true });
  await ingress?.stop();
  await github?.close();
  await pool?.end();
  await db?.drop();
});

describe.skipIf(!hasChromium)("svc setup github", () => {
  it("serves the page only to the loopback client or an admin token, and only while a setup waits", async () => {
    const url = `${publicUrl}/ui/setup/github`;
    const idle = await fetch(url);
    expect(idle.status).toBe(404);
    expect(await idle.text()).toContain("run svc setup github on the daemon");
    // through a proxy: a token is needed, and it must hold admin
    const proxied = { "x-forwarded-for": "203.0.113.7" };
    const anonymous = await fetch(url, { headers: proxied });
    expect(anonymous.status).toBe(401);
    expect(await anonymous.text()).toContain('action="/ui/login"');
    expect((await fetch(url, { headers: { ...proxied, authorization: `Bearer ${READER}` } })).status).toBe(
      403,
    );
    expect((await fetch(url, { headers: { ...proxied, authorization: `Bearer ${ADMIN}` } })).status).toBe(
      404,
    );
    // a page of another site cannot open it through the browser as the loopback client
    expect((await fetch(url, { headers: { "sec-fetch-site": "cross-site" } })).status).toBe(401);
    // an admin token signs in through the form, back to this page
    const login = await fetch(`${publicUrl}/ui/login`, {
      method: "POST",
      redirect: "manual",
      headers: { ...proxied, "content-type": "application/x-www-form-urlencoded", origin: publicUrl },
      body: new URLSearchParams({ token: ADMIN, next: "/ui/setup/github" }).toString(),
    });
    expect(login.status).toBe(303);
    expect(login.headers.get("location")).toBe("/ui/setup/github");
  });

  it("creates the App: the button posts exactly svc's manifest, the redirect stores the key and secret encrypted and writes a valid daemon.yaml", async () => {
    const before = await readFile(join(dir, "daemon.yaml"), "utf8");
    const cli = setupGithub();
    const url = await pageAddress(cli);
    expect(url).toBe(`${publicUrl}/ui/setup/github`);

    const page = await browser.newPage();
    const response = await page.goto(url);
    expect(response!.status()).toBe(200);
    const csp = response!.headers()["content-security-policy"] ?? "";
    expect(csp).toContain(`form-action 'self' ${github.url}`);
    expect(csp).toContain("script-src 'none'");
    expect(response!.headers()["cache-control"]).toBe("no-store");
    await cli.waitFor("The page was opened");
    await Promise.all([
      page.waitForURL("**/ui/setup/github/callback?*"),
      page.click("form#create-app button"),
    ]);
    expect(await page.textContent("h1")).toContain("created");

    // what reached GitHub: the form's target, its state, and the manifest, exactly
    expect(github.posted).toHaveLength(1);
    const posted = github.posted[0]!;
    expect(posted.org).toBeUndefined();
    expect(posted.state).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(posted.manifest.default_permissions).toEqual(PERMISSIONS);
    expect(posted.manifest.default_events).toEqual(EVENTS);
    expect(posted.manifest).toMatchObject({
      url: publicUrl,
      hook_attributes: { url: `${publicUrl}/webhooks/github`, active: true },
      redirect_url: `${publicUrl}/ui/setup/github/callback`,
      public: false,
    });
    expect(new URL(page.url()).searchParams.get("state")).toBe(posted.state);
    const app = github.apps.get(posted.code)!;
    expect(github.conversions).toEqual([{ code: posted.code, status: 201 }]);
    expect(await page.getAttribute("a#install", "href")).toBe(`${app.htmlUrl}/installations/new`);
    await page.close();

    expect(await cli.exited).toBe(0);
    const out = cli.stdout();
    expect(out).toContain("The page was opened: press its button");
    expect(out).toContain("GitHub sent the browser back with a code; the daemon exchanges it");
    expect(out).toContain(`Created the GitHub App ${app.name} (${app.slug}, id ${app.id})`);
    expect(out).toContain(
      `install the App on the repositories svc works on: ${app.htmlUrl}/installations/new`,
    );
    expect(out).toContain("svc config validate && svc daemon restart");
    expect(out + cli.stderr()).not.toContain(app.webhookSecret);

    // stored sealed: neither value is in the rows, both open with the instance key
    const rows = await secretRows();
    expect(rows.map((row) => row.name)).toEqual(["codehost/app-private-key", "webhook/github"]);
    for (const row of rows) {
      expect(row.ciphertext.toString("latin1")).not.toContain(app.webhookSecret);
      expect(row.ciphertext.toString("latin1")).not.toContain("PRIVATE KEY");
    }
    const key = await readInstanceKey(join(dir, "instance.key"));
    const opened = await readSecrets(pool, key, ["codehost/app-private-key", "webhook/github"]);
    expect(opened.get("codehost/app-private-key")).toBe(app.pem);
    expect(opened.get("webhook/github")).toBe(app.webhookSecret);

    // daemon.yaml: every line it had is still there, as written; the App and the source are added
    const after = await readFile(join(dir, "daemon.yaml"), "utf8");
    const added = after.split("\n").filter((line) => !before.split("\n").includes(line));
    expect(after.split("\n").filter((line) => before.split("\n").includes(line))).toEqual(before.split("\n"));
    expect(added).toEqual([
      "    github:",
      "      verify: codehost",
      "      secret_ref: webhook/github",
      `  # the GitHub App ${app.slug}, created by svc setup github`,
      "  app:",
      `    id: ${app.id}`,
      "    secret_ref: codehost/app-private-key",
    ]);
    expect(after).toContain(KEPT_COMMENT);
    const validate = await runSvc(["config", "validate", "--dir", dir], {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
    });
    expect(validate.stdout + validate.stderr).toMatch(/configuration valid/);
    expect(validate.code).toBe(0);

    // restarted, the daemon takes GitHub's deliveries signed with the App's webhook secret. The
    // browser closes first (and opens again after): a connection Chromium keeps to the ingress is
    // not idle to its drain, which then waits out its whole 30 s grace (ingress/server.ts)
    await browser.close();
    await ingress.stop();
    ({ role: ingress } = await startIngress({ ...env, SVC_PORT: String(port) }));
    browser = await launchBrowser();
    expect((await postSignedPullRequest(publicUrl, app.webhookSecret, PR_PAYLOAD)).status).toBe(202);
    expect((await postSignedPullRequest(publicUrl, "not-the-secret", PR_PAYLOAD)).status).toBe(401);
  }, 180_000);

  it("refuses, without --force, a daemon.yaml that already has codehost.app, starting nothing", async () => {
    const cli = setupGithub();
    expect(await cli.exited).toBe(1);
    expect(cli.stderr()).toContain(
      `"codehost.app" is already set (id ${[...github.apps.values()][0]!.id}); svc setup github does not replace it - pass --force`,
    );
    expect(cli.stderr()).toContain("nothing was started");
    expect((await readGithubSetup(pool))?.status).toBe("done");
  }, 60_000);

  it("a reused code changes nothing: GitHub answers 404, the page and the command say so", async () => {
    const yaml = await readFile(join(dir, "daemon.yaml"), "utf8");
    const rows = await secretRows();
    const used = github.posted[0]!.code;
    const cli = setupGithub(["--force"]);
    const { page, state } = await openSetupPage(await pageAddress(cli));
    const response = await page.goto(`${publicUrl}/ui/setup/github/callback?code=${used}&state=${state}`);
    expect(response!.status()).toBe(409);
    expect(await page.textContent("p.error")).toContain(
      "GitHub does not know the code it sent back (404 Not Found): it was already used, or it expired",
    );
    await page.close();
    expect(await cli.exited).toBe(1);
    expect(cli.stderr()).toContain("it was already used, or it expired");
    expect(cli.stderr()).toContain("nothing was written");
    expect(github.conversions.at(-1)).toEqual({ code: used, status: 404 });
    expect(await readFile(join(dir, "daemon.yaml"), "utf8")).toBe(yaml);
    expect(await secretRows()).toEqual(rows);
  }, 90_000);

  it("refuses a redirect whose state is not the waiting setup's, without asking GitHub", async () => {
    const yaml = await readFile(join(dir, "daemon.yaml"), "utf8");
    const rows = await secretRows();
    const cli = setupGithub(["--force", "--org", "acme"]);
    const { page, state } = await openSetupPage(await pageAddress(cli));
    expect(await page.getAttribute("form#create-app", "action")).toBe(
      `${github.url}/organizations/acme/settings/apps/new?state=${state}`,
    );
    const fresh = github.issueCode({ name: "attacker's app" });
    const conversions = github.conversions.length;
    for (const wrong of [`${state.slice(0, -1)}x`, "forged"]) {
      const response = await page.goto(`${publicUrl}/ui/setup/github/callback?code=${fresh}&state=${wrong}`);
      expect(response!.status()).toBe(403);
      expect(await page.textContent("p.error")).toContain(
        "did not come from that page's form; nothing was changed",
      );
    }
    await page.close();
    expect(github.conversions).toHaveLength(conversions);
    expect((await readGithubSetup(pool))?.status).toBe("waiting");
    expect(await readFile(join(dir, "daemon.yaml"), "utf8")).toBe(yaml);
    expect(await secretRows()).toEqual(rows);
    // Ctrl-C: the command stops and the page stops working
    cli.child.kill("SIGINT");
    expect(await cli.exited).toBe(1);
    expect(cli.stderr()).toContain("cancelled");
    expect(await readGithubSetup(pool)).toBeNull();
  }, 90_000);
});
