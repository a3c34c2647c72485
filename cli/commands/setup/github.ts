import { spawn } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Command, Flags } from "@oclif/core";
import type pg from "pg";
import { parseDocument } from "yaml";
import { createPool, redactUrl, resolveDatabase } from "../../../db/connect.ts";
import {
  cancelGithubSetup,
  type GithubSetupResult,
  type GithubSetupSession,
  isExpired,
  readGithubSetup,
  startGithubSetup,
} from "../../../db/github-setup.ts";
import { migrate } from "../../../db/migrate.ts";
import { GITHUB_LOGIN, SETUP_PAGE_PATH } from "../../../shared/codehost/github-manifest.ts";
import { codehostWebBase } from "../../../shared/config/daemon/repos.ts";
import { DEFAULT_HOST, DEFAULT_PORT } from "../../../shared/config/daemon/server.ts";
import { configDirFrom, instanceKeyPath } from "../../../shared/config/dir.ts";
import { planGithubAppEdit } from "../../../shared/config/github-app-edit.ts";
import { isLoopbackHost } from "../../../shared/config/network.ts";
import { DEFAULT_CODEHOST_API_URL } from "../../../shared/config/outputs.ts";
import { InstanceKeyError, readInstanceKey } from "../../../shared/secrets/instance-key.ts";
import { configEnvOf, dirFlag } from "../../config-dir-flag.ts";
import { asMap, httpUrl, substituted } from "../../daemon-yaml.ts";

const POLL_MS = 500;

export default class SetupGithub extends Command {
  static override summary =
    "Create svc's GitHub App from its manifest, store its key and webhook secret, write daemon.yaml";
  static override description =
    "Starts the GitHub App manifest flow and waits for it. It prints the address of a page the daemon serves " +
    "(/ui/setup/github: from this machine, or elsewhere signed in with a token holding admin); that page's one " +
    "button posts svc's manifest to GitHub (github.com, or the GitHub Enterprise server of codehost.api_url; with " +
    "--org, for that organisation): the permissions svc uses (contents read, pull requests and issues write, " +
    "checks read, metadata read), the events it reads (pull_request, issue_comment, pull_request_review_comment, " +
    "push) and the webhook <server.public_url>/webhooks/github. GitHub sends the browser back with a code, which " +
    "the daemon exchanges for the App's id, private key and webhook secret: the key is stored as " +
    "codehost/app-private-key and the secret as webhook/github, encrypted with the instance key, and " +
    "codehost.app and webhooks.sources.github are written into daemon.yaml, keeping its comments and layout. " +
    "A daemon.yaml that already has codehost.app, a codehost token or webhooks.sources.github is refused " +
    "without --force. A code already used, expired or refused by GitHub: nothing is written. The daemon must be " +
    "running with server.public_url set; afterwards, install the App and restart the daemon.";
  static override examples = [
    "<%= config.bin %> setup github",
    "<%= config.bin %> setup github --org acme",
    {
      description: "Replace the App (and the github source) daemon.yaml already names:",
      command: "<%= config.bin %> setup github --force",
    },
  ];
  static override flags = {
    org: Flags.string({
      description: "register the App for this GitHub organisation (default: your own account)",
      helpValue: "<login>",
    }),
    force: Flags.boolean({
      description:
        "replace codehost.app, a codehost token and webhooks.sources.github when daemon.yaml already has them",
      default: false,
    }),
    browser: Flags.boolean({
      description: "open the page in this machine's browser when there is one (--no-browser: only print it)",
      default: true,
      allowNo: true,
    }),
    dir: dirFlag,
  };

  /** The message as written (oclif's error() rewraps it), then exit 1. */
  private fail(message: string): never {
    process.stderr.write(`${message}\n`);
    return this.exit(1);
  }

  async run(): Promise<void> {
    const { flags } = await this.parse(SetupGithub);
    const env = configEnvOf(flags.dir);
    const configDir = configDirFrom(env);
    if (flags.org !== undefined && !GITHUB_LOGIN.test(flags.org))
      this.fail(`"${flags.org}" is not a GitHub organisation login: use letters, digits and single hyphens`);

    const file = join(configDir, "daemon.yaml");
    const text = await readFile(file, "utf8").catch((error: NodeJS.ErrnoException) =>
      this.fail(
        `cannot read ${file} (${error.code ?? error.message}): create the configuration first (svc init), or point --dir at it`,
      ),
    );
    const plan = planGithubAppEdit(text, { file, force: flags.force });
    if (!plan.ok) this.fail(`${plan.message}; nothing was started`);
    const settings = readSettings(text, env);
    if (!settings.publicUrl)
      this.fail(
        `${file}: "server.public_url" is not set (or is not an http(s) URL): GitHub delivers the App's webhooks to ` +
          "<public_url>/webhooks/github and sends your browser back to <public_url>/ui/setup/github/callback - set it " +
          "to the daemon's address as GitHub and your browser reach it (e.g. https://svc.example.com), restart the " +
          "daemon (svc daemon restart), then run svc setup github again",
      );
    const keyPath = instanceKeyPath(configDir, env);
    try {
      await readInstanceKey(keyPath);
    } catch (error) {
      if (!(error instanceof InstanceKeyError)) throw error;
      this.fail(`the App's secrets are stored encrypted, but ${error.message}; nothing was started`);
    }

    const database = await resolveDatabase(configDir, env);
    const pool = createPool(database.url, { max: 1, applicationName: "svc-setup" });
    let session: GithubSetupSession | undefined;
    let interrupted = false;
    const onInterrupt = () => {
      interrupted = true;
    };
    process.once("SIGINT", onInterrupt);
    process.once("SIGTERM", onInterrupt);
    try {
      try {
        await migrate(pool);
        session = await startGithubSetup(pool, {
          id: randomUUID(),
          state: randomBytes(32).toString("base64url"),
          ...(flags.org ? { org: flags.org } : {}),
          force: flags.force,
        });
      } catch (error) {
        this.fail(
          `cannot start the setup in the database at ${redactUrl(database.url)}: ${(error as Error).message}`,
        );
      }
      const local = daemonAddress(settings, env);
      const page = `${local}${SETUP_PAGE_PATH}`;
      const remote = `${settings.publicUrl}${SETUP_PAGE_PATH}`;
      const where = codehostWebBase(settings.apiUrl);
      this.log(
        `Open this page in a browser to create svc's GitHub App on ${where}${flags.org ? ` for the organisation ${flags.org}` : ""}:`,
      );
      this.log(`  ${page}`);
      if (remote !== page)
        this.log(`  (from another machine: ${remote}, signed in with a token that has the admin scope)`);
      this.log(
        `Waiting for GitHub to send the browser back, until ${session.expiresAt} (Ctrl-C to cancel)...`,
      );
      if (flags.browser) openBrowser(page);
      const reachable = await answers(local);
      if (reachable !== true)
        this.log(
          `warning: the daemon does not answer at ${local} (${reachable}); the page is the daemon's - start it (svc daemon start), or set SVC_DAEMON_URL to where it listens; still waiting`,
        );
      const result = await this.wait(pool, session.id, () => interrupted);
      this.report(result);
    } finally {
      process.off("SIGINT", onInterrupt);
      process.off("SIGTERM", onInterrupt);
      if (session) await cancelGithubSetup(pool, session.id).catch(() => {});
      await pool.end();
    }
  }

  /** Polls the setup until it is done (its result) or failed, expired, replaced, or interrupted (exit 1). */
  private async wait(pool: pg.Pool, id: string, interrupted: () => boolean): Promise<GithubSetupResult> {
    let opened = false;
    let exchanging = false;
    for (;;) {
      if (interrupted()) this.fail("cancelled: the setup page no longer works; nothing was written");
      const now = await readGithubSetup(pool);
      if (!now || now.id !== id)
        this.fail(
          "another svc setup github started since (or the setup was removed); this one stopped, nothing was written by it",
        );
      if (now.pageOpenedAt && !opened) {
        opened = true;
        this.log("The page was opened: press its button, then create the App on GitHub.");
      }
      // the exchange may begin and end between two looks: said once whatever status comes after waiting
      if (now.status !== "waiting" && !exchanging) {
        exchanging = true;
        this.log(
          "GitHub sent the browser back with a code; the daemon exchanges it for the App's credentials...",
        );
      }
      if (now.status === "done" && now.result) return now.result;
      if (now.status === "failed") this.fail(now.error ?? "the setup failed; see the ingress log");
      if (isExpired(now))
        this.fail(
          now.status === "exchanging"
            ? "the setup expired while the daemon was exchanging GitHub's code; see the ingress log, then run svc setup github again"
            : "the setup expired: GitHub's code and this setup live one hour; run svc setup github again",
        );
      await sleep(POLL_MS);
    }
  }

  private report(result: GithubSetupResult): void {
    this.log(
      `Created the GitHub App ${result.name} (${result.slug}, id ${result.appId})${result.owner ? ` owned by ${result.owner}` : ""}: ${result.htmlUrl}`,
    );
    this.log(
      `Stored ${result.secrets.join(" and ")} in the database, encrypted with the daemon's instance key.`,
    );
    this.log(`Wrote codehost.app and webhooks.sources.github into ${result.file}.`);
    this.log("Next:");
    this.log(`  1. install the App on the repositories svc works on: ${result.installUrl}`);
    this.log("  2. restart the daemon so it reads them: svc config validate && svc daemon restart");
  }
}

interface Settings {
  publicUrl?: string;
  apiUrl: string;
  host: string;
  port: number;
}

/** What the command needs of daemon.yaml, read as written (the daemon's variables may be unset here). */
function readSettings(text: string, env: NodeJS.ProcessEnv): Settings {
  const data = asMap(parseDocument(text).toJSON());
  const server = asMap(data?.server);
  const codehost = asMap(data?.codehost);
  const publicUrl = httpUrl(substituted(server?.public_url, env));
  const apiUrl = httpUrl(substituted(codehost?.api_url, env)) ?? DEFAULT_CODEHOST_API_URL;
  const host = env.SVC_HOST?.trim() || (typeof server?.host === "string" ? server.host : DEFAULT_HOST);
  const portText = env.SVC_PORT?.trim() || String(server?.port ?? DEFAULT_PORT);
  const port = /^\d{1,5}$/.test(portText) && Number(portText) > 0 ? Number(portText) : DEFAULT_PORT;
  return { ...(publicUrl ? { publicUrl } : {}), apiUrl, host, port };
}

/** Where this machine reaches the daemon: SVC_DAEMON_URL, else daemon.yaml's bind address (loopback for a wildcard). */
function daemonAddress(settings: Settings, env: NodeJS.ProcessEnv): string {
  const configured = httpUrl(env.SVC_DAEMON_URL?.trim());
  if (configured) return configured;
  const host = isLoopbackHost(settings.host) ? settings.host : "127.0.0.1";
  return `http://${host.includes(":") && !host.startsWith("[") ? `[${host}]` : host}:${settings.port}`;
}

async function answers(url: string): Promise<true | string> {
  try {
    await fetch(`${url}/health`, { signal: AbortSignal.timeout(3_000) });
    return true;
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code;
    return cause ?? (error as Error).name;
  }
}

/** A browser of this desktop shows the page; on a server (no display) nothing happens. */
function openBrowser(url: string): void {
  if (!process.stdout.isTTY) return;
  const opener =
    process.platform === "darwin"
      ? "open"
      : process.platform === "linux" && (process.env.DISPLAY || process.env.WAYLAND_DISPLAY)
        ? "xdg-open"
        : undefined;
  if (!opener) return;
  try {
    const child = spawn(opener, [url], { detached: true, stdio: "ignore" });
    child.on("error", () => {});
    child.unref();
  } catch {
    // no browser: the address is printed above
  }
}
