import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { createPublicKey } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { join } from "node:path";
import { type BrowserContext, chromium } from "playwright-core";
import type { Run } from "../../e2e/cli/support.ts";
import { type FakeGitHub, type HostedRepo, startFakeGitHub } from "../../e2e/outputs/fake-github.ts";
import type { FakeAppSpec } from "../../e2e/outputs/fake-github-app.ts";
import { type FakeGitHubManifest, startFakeGitHubManifest } from "../../e2e/outputs/fake-github-manifest.ts";
import { CHROMIUM } from "../../e2e/ui/support.ts";
import { type GitHost, gitHost } from "../../support/git-smart-http.ts";

/**
 * What the first-review drill (issue 54's closing-note figure) needs around the real svc: npm's
 * environment for installing the packed tarball, a child process with a timer, one loopback GitHub
 * origin that is the manifest web form, the App API, git over smart HTTP and the REST API at once,
 * and `svc setup github` driven in headless Chromium.
 */

/**
 * npm's certificate settings of this machine (a child npm with its own prefix no longer reads the
 * global npmrc that names the CA file), as test/e2e/cli/package-update.test.ts passes them.
 */
export function npmTrust(): Record<string, string> {
  const trust: Record<string, string> = {};
  for (const name of ["NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR"]) {
    const value = process.env[name];
    if (value) trust[name] = value;
  }
  const cafile = execFileSync("npm", ["config", "get", "cafile"], { encoding: "utf8" }).trim();
  if (cafile && cafile !== "null" && cafile !== "undefined") trust.npm_config_cafile = cafile;
  return trust;
}

/** A command in a child process with exactly `env` (never the runner's), its output and its duration. */
export function run(
  command: string,
  args: string[],
  env: Record<string, string>,
  cwd: string,
): Promise<Run & { ms: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.stderr.on("data", (chunk) => (stderr += chunk));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr, ms: performance.now() - started }));
  });
}

/** A command left running while the drill acts (svc setup github waits for the browser). */
export interface Waiting {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  exited: Promise<number | null>;
  /** stdout once it matches `text`, or undefined when the command exited first */
  until(text: RegExp, boundMs: number): Promise<string | undefined>;
}

export function start(command: string, args: string[], env: Record<string, string>, cwd: string): Waiting {
  const child = spawn(command, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  const wakers = new Set<() => void>();
  child.stdout!.on("data", (chunk) => {
    stdout += chunk;
    for (const wake of wakers) wake();
  });
  child.stderr!.on("data", (chunk) => (stderr += chunk));
  const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  return {
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    until: (text, boundMs) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          wakers.delete(check);
          reject(new Error(`${command} ${args.join(" ")} never printed ${text}:\n${stdout}\n${stderr}`));
        }, boundMs);
        function check() {
          if (!text.test(stdout)) return;
          wakers.delete(check);
          clearTimeout(timer);
          resolve(stdout);
        }
        wakers.add(check);
        void exited.then(() => {
          if (!wakers.has(check)) return;
          wakers.delete(check);
          clearTimeout(timer);
          resolve(text.test(stdout) ? stdout : undefined);
        });
        check();
      }),
  };
}

export interface LoopbackGitHub {
  /** web and API on one origin: what codehost.api_url names */
  url: string;
  github: FakeGitHub;
  git: GitHost;
  manifest: FakeGitHubManifest;
  /** the Apps the API knows; the App `svc setup github` made joins once it is installed */
  apps: FakeAppSpec[];
  /**
   * The App made from the manifest, installed on `repos` (what the person does on GitHub after
   * creating it: the install link): the API then signs it in and issues its installation tokens.
   */
  install(installationId: number, account: string, repos: string[]): FakeAppSpec;
  close(): Promise<void>;
}

/**
 * One loopback GitHub: the manifest form and its conversion (fake-github-manifest.ts), the App's
 * API and webhook deliveries (fake-github-app.ts), git over smart HTTP for the installation tokens
 * it issued (git-smart-http.ts), and the REST API (fake-github.ts), all on fake-github.ts's origin.
 */
export async function startLoopbackGitHub(repos: Record<string, HostedRepo>): Promise<LoopbackGitHub> {
  const manifest = await startFakeGitHubManifest();
  const apps: FakeAppSpec[] = [];
  let issued: FakeGitHub | undefined;
  const git = gitHost({
    authorize: (token, repo) =>
      issued?.exchanges.some((entry) => entry.token === token) ? repo in repos : "unknown",
  });
  for (const [name, hosted] of Object.entries(repos))
    git.createRepo(name, { private: hosted.repository.private === true });
  const github = await startFakeGitHub({
    users: {},
    apps,
    repos,
    // the web form, the conversion and git answer before the API reads a JSON body
    git: {
      handle: (req: IncomingMessage, res: ServerResponse) =>
        manifest.handle(req, res) || git.handle(req, res),
    },
  });
  issued = github;
  return {
    url: github.url,
    github,
    git,
    manifest,
    apps,
    install(installationId, account, installed) {
      const posted = manifest.posted.at(-1);
      const app = posted && manifest.apps.get(posted.code);
      if (!posted || !app) throw new Error("no App was created from a manifest");
      const hook = posted.manifest.hook_attributes as { url?: string } | undefined;
      const spec: FakeAppSpec = {
        id: app.id,
        slug: app.slug,
        publicKey: createPublicKey(app.pem).export({ type: "spki", format: "pem" }).toString(),
        installations: [{ id: installationId, account, repos: installed }],
        ...(hook?.url ? { webhook: { url: hook.url, secret: app.webhookSecret } } : {}),
      };
      apps.push(spec);
      return spec;
    },
    close: async () => {
      await github.close();
      await manifest.close();
      git.close();
    },
  };
}

/** Debian's Chromium, headless, with a new profile in `profile` (as test/e2e/ui/setup-github.test.ts). */
export function launchBrowser(profile: string): Promise<BrowserContext> {
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

/**
 * The operator's part of `svc setup github`: open the page the command printed, press its one
 * button, and follow GitHub's redirect back to the daemon. Returns the page's heading.
 */
export async function pressCreateApp(browser: BrowserContext, address: string): Promise<string> {
  const page = await browser.newPage();
  try {
    const response = await page.goto(address);
    if (response?.status() !== 200) throw new Error(`${address} answered ${response?.status()}`);
    await Promise.all([
      page.waitForURL("**/ui/setup/github/callback?*"),
      page.click("form#create-app button"),
    ]);
    return (await page.textContent("h1")) ?? "";
  } finally {
    await page.close();
  }
}

/** `m:ss.s` for a duration in milliseconds. */
export function clock(ms: number): string {
  const seconds = ms / 1000;
  const minutes = Math.floor(seconds / 60);
  return `${minutes}:${(seconds - minutes * 60).toFixed(1).padStart(4, "0")}`;
}

/** Node 24's bin directory of the `node` dev dependency: the only node the installed svc may see. */
export function node24Bin(root: string): string {
  return join(root, "node_modules", "node", "bin");
}
