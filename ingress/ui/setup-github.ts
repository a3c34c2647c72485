import { randomBytes } from "node:crypto";
import { readFile, realpath, rename, rm, stat, writeFile } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { type NextFunction, type Response, Router } from "express";
import type pg from "pg";
import {
  claimGithubSetup,
  finishGithubSetup,
  type GithubSetupResult,
  type GithubSetupSession,
  isExpired,
  markPageOpened,
  readGithubSetup,
  stateMatches,
} from "../../db/github-setup.ts";
import { putSecret } from "../../db/secrets.ts";
import { withTransaction } from "../../db/transaction.ts";
import packageJson from "../../package.json" with { type: "json" };
import {
  APP_KEY_REF,
  appManifest,
  type ConvertedApp,
  convertManifestCode,
  installationUrl,
  MANIFEST_CODE,
  ManifestConversionError,
  manifestFormAction,
  SETUP_CALLBACK_PATH,
  SETUP_PAGE_PATH,
  WEBHOOK_SECRET_REF,
} from "../../shared/codehost/github-manifest.ts";
import { instanceKeyPath as defaultKeyPath } from "../../shared/config/dir.ts";
import { planGithubAppEdit } from "../../shared/config/github-app-edit.ts";
import { DEFAULT_CODEHOST_API_URL } from "../../shared/config/outputs.ts";
import type { SecretSource } from "../../shared/config/secret-source.ts";
import type { ConfigSnapshot } from "../../shared/config/types.ts";
import type { Logger } from "../../shared/logger.ts";
import { InstanceKeyError, readInstanceKey } from "../../shared/secrets/instance-key.ts";
import { ApiError } from "../api/errors.ts";
import { createAccessControl } from "../auth/middleware.ts";
import { isDatabaseUnavailable, RETRY_AFTER_SECONDS } from "../errors.ts";
import { loginPage, messagePage } from "./layout.ts";
import { authenticatePage } from "./session.ts";
import { donePage, noSetupPage, setupPage, usedSetupPage } from "./setup-github-pages.ts";

export interface GithubSetupDependencies {
  pool: pg.Pool;
  config: Readonly<ConfigSnapshot>;
  logger: Logger;
  resolveSecret: (source: SecretSource) => string;
  /** the instance key that seals the stored secrets; by default `<config dir>/instance.key` */
  instanceKeyPath?: string;
}

/** Who may open the page when not on loopback: a token with `admin` (the loopback client has `*`). */
const SCOPE = "admin";

/**
 * `svc setup github`'s pages on the daemon. `GET /ui/setup/github` (loopback, or a token with
 * `admin`) shows one button whose form posts svc's manifest to GitHub with the waiting setup's
 * `state`. `GET /ui/setup/github/callback` is where GitHub sends the browser back with a code: a
 * cross-site navigation that carries no session cookie and is no loopback client, so the `state`
 * alone admits it; it must be the waiting setup's, once, within the hour. The code is exchanged
 * (`POST /app-manifests/{code}/conversions`), the App's private key and webhook secret are stored
 * encrypted, daemon.yaml gets `codehost.app` and `webhooks.sources.github`, and the installation
 * link is shown. A refused exchange, a used or expired code, a wrong state: nothing is written.
 */
export function createGithubSetupRouter(deps: GithubSetupDependencies): Router {
  const router = Router();
  const access = createAccessControl(deps);
  const keyPath = deps.instanceKeyPath ?? defaultKeyPath(deps.config.dir);
  const apiUrl = deps.config.codehost?.apiUrl ?? DEFAULT_CODEHOST_API_URL;
  const publicUrl = deps.config.server.publicUrl;

  router.get(SETUP_PAGE_PATH, async (req, res, next) => {
    res.locals.route = SETUP_PAGE_PATH;
    noStore(res, []);
    try {
      access.authorize(await authenticatePage(access, req), SCOPE);
      const session = await readGithubSetup(deps.pool);
      const waiting = session && session.status === "waiting" && !isExpired(session) ? session : undefined;
      if (!waiting) return void sendPage(res, ...noSetupPage(session));
      const problem = configProblem(deps.config);
      if (problem) return void sendPage(res, 409, messagePage("Cannot create the App", problem, false));
      const manifest = appManifest(publicUrl!);
      const action = manifestFormAction(apiUrl, waiting.org, waiting.state);
      // the form posts to GitHub: its origin joins 'self' in form-action, for this page alone
      noStore(res, [new URL(action).origin, new URL(publicUrl!).origin]);
      await markPageOpened(deps.pool, waiting.id);
      deps.logger.info("the GitHub App setup page was opened", { event: "setup.github_page" });
      sendPage(
        res,
        200,
        setupPage({ action, manifest, org: waiting.org, apiUrl, expiresAt: waiting.expiresAt }),
      );
    } catch (error) {
      failPage(error, res, next, deps.logger);
    }
  });

  router.get(SETUP_CALLBACK_PATH, async (req, res, next) => {
    res.locals.route = SETUP_CALLBACK_PATH;
    noStore(res, []);
    const code = typeof req.query.code === "string" ? req.query.code : "";
    const state = typeof req.query.state === "string" ? req.query.state : "";
    try {
      if (!code || !state)
        return void sendPage(
          res,
          400,
          messagePage(
            "Not GitHub's redirect",
            "this address takes GitHub's redirect after an App is created from svc's manifest, with a code and the state; nothing was changed",
            false,
          ),
        );
      const session = await readGithubSetup(deps.pool);
      if (!session)
        return void sendPage(
          res,
          404,
          messagePage(
            "No setup is waiting",
            "no svc setup github is waiting for GitHub; nothing was changed - run svc setup github on the daemon's host and use the page it names",
            false,
          ),
        );
      if (!stateMatches(session, state)) {
        deps.logger.warn("a GitHub App setup redirect with a wrong state was refused", {
          event: "setup.github_state_refused",
        });
        return void sendPage(
          res,
          403,
          messagePage(
            "Refused",
            "the state of this redirect is not the one svc gave the setup page, so it did not come from that page's form; nothing was changed - open the page svc setup github names and press its button",
            false,
          ),
        );
      }
      if (session.status !== "waiting" || isExpired(session))
        return void sendPage(res, ...usedSetupPage(session));
      if (!MANIFEST_CODE.test(code))
        return void sendPage(
          res,
          400,
          messagePage("Not a code", "the code is not one GitHub writes; nothing was changed", false),
        );
      if (!(await claimGithubSetup(deps.pool, session.id, state)))
        return void sendPage(res, ...usedSetupPage((await readGithubSetup(deps.pool)) ?? session));
      let result: GithubSetupResult;
      try {
        result = await complete(deps, { session, code, keyPath, apiUrl });
      } catch (error) {
        const message =
          error instanceof SetupError ? error.message : `the setup failed: ${(error as Error).message}`;
        await finishGithubSetup(deps.pool, session.id, { status: "failed", error: message });
        deps.logger.warn("the GitHub App setup failed", { event: "setup.github_failed", reason: message });
        if (!(error instanceof SetupError)) throw error;
        return void sendPage(res, error.status, messagePage("The App was not set up", message, false));
      }
      deps.logger.info("the GitHub App was created and configured", {
        event: "setup.github_done",
        app_id: result.appId,
        slug: result.slug,
      });
      sendPage(res, 200, donePage(result));
    } catch (error) {
      failPage(error, res, next, deps.logger);
    }
  });
  return router;
}

/** A failure of the setup itself: its message is what the page and the command show. */
class SetupError extends Error {
  readonly status: number;
  constructor(message: string, status = 409) {
    super(message);
    this.status = status;
  }
}

/**
 * The checks that need nothing from GitHub, the exchange, then every write: both secrets and the
 * setup's outcome in one transaction, daemon.yaml renamed into place inside it (put back when the
 * commit fails). Any refusal before the writes leaves everything as it was.
 */
async function complete(
  deps: GithubSetupDependencies,
  input: { session: GithubSetupSession; code: string; keyPath: string; apiUrl: string },
): Promise<GithubSetupResult> {
  const { session, code, keyPath, apiUrl } = input;
  const problem = configProblem(deps.config);
  if (problem) throw new SetupError(`${problem}; nothing was written`);
  let key: Buffer;
  try {
    key = await readInstanceKey(keyPath);
  } catch (error) {
    if (!(error instanceof InstanceKeyError)) throw error;
    throw new SetupError(`cannot store the App's secrets: ${error.message}; nothing was written`);
  }
  const file = await realpath(join(deps.config.dir, "daemon.yaml")).catch(() =>
    join(deps.config.dir, "daemon.yaml"),
  );
  const read = async () =>
    readFile(file, "utf8").catch((error: NodeJS.ErrnoException) => {
      throw new SetupError(`cannot read ${file} (${error.code ?? error.message}); nothing was written`);
    });
  const before = await read();
  const planned = planGithubAppEdit(before, { file, force: session.force });
  if (!planned.ok)
    throw new SetupError(`${planned.message}; nothing was written, and GitHub's code was not used`);

  let app: ConvertedApp;
  try {
    app = await convertManifestCode(apiUrl, code, { userAgent: `svc/${packageJson.version}` });
  } catch (error) {
    if (error instanceof ManifestConversionError)
      throw new SetupError(error.message, error.status === 404 || error.status === 422 ? 409 : 502);
    throw error;
  }
  const created = `GitHub created the App ${app.slug} (${app.htmlUrl}), but svc could not keep it`;
  const remove = "delete that App on GitHub (its settings page, Advanced), then run svc setup github again";

  // daemon.yaml may have changed during the round trip: the edit is planned again on what is there now
  const current = await read();
  const plan = current === before ? planned : planGithubAppEdit(current, { file, force: session.force });
  if (!plan.ok) throw new SetupError(`${created}: ${plan.message}; nothing was written - ${remove}`);
  const after = plan.apply({ id: app.id, slug: app.slug });

  const result: GithubSetupResult = {
    appId: app.id,
    slug: app.slug,
    name: app.name,
    htmlUrl: app.htmlUrl,
    installUrl: installationUrl(app.htmlUrl),
    ...(app.owner ? { owner: app.owner } : {}),
    file,
    secrets: [APP_KEY_REF, WEBHOOK_SECRET_REF],
  };
  let renamed = false;
  try {
    await withTransaction(deps.pool, async (client) => {
      await putSecret(client, key, APP_KEY_REF, app.pem);
      await putSecret(client, key, WEBHOOK_SECRET_REF, app.webhookSecret);
      await finishGithubSetup(client, session.id, { status: "done", result });
      await replaceFile(file, after);
      renamed = true;
    });
  } catch (error) {
    if (renamed) await replaceFile(file, current).catch(() => {});
    throw new SetupError(`${created}: ${(error as Error).message}; nothing was written - ${remove}`, 500);
  }
  return result;
}

/** Writes `text` beside `file` and renames it into place, keeping the file's mode. */
async function replaceFile(file: string, text: string): Promise<void> {
  const mode = (await stat(file)).mode & 0o777;
  const temporary = join(dirname(file), `.${basename(file)}.${randomBytes(6).toString("hex")}.tmp`);
  try {
    await writeFile(temporary, text, { mode, flag: "wx" });
    await rename(temporary, file);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}

/** Why this daemon cannot offer the App, naming the key to set; undefined when it can. */
function configProblem(config: Readonly<ConfigSnapshot>): string | undefined {
  if (config.codehost?.kind === "gitlab")
    return "codehost.kind is gitlab in daemon.yaml, and GitHub Apps are GitHub's - svc setup github is for a GitHub code host";
  if (!config.server.publicUrl)
    return "server.public_url is not set in the daemon's daemon.yaml: GitHub delivers the App's webhooks to <public_url>/webhooks/github and sends the browser back to <public_url>/ui/setup/github/callback - set it, restart the daemon (svc daemon restart) and open this page again";
  return undefined;
}

function sendPage(res: Response, status: number, body: string): void {
  res.status(status).type("html").send(body);
}

/**
 * No cache keeps the page (its form holds the state) and the page may post only to itself and to
 * `formTargets`; otherwise the same policy as every /ui page: no script, our stylesheet only.
 */
function noStore(res: Response, formTargets: string[]): void {
  res.set("Cache-Control", "no-store");
  res.set(
    "Content-Security-Policy",
    [
      "default-src 'none'",
      "script-src 'none'",
      "style-src 'self'",
      "img-src 'self'",
      `form-action ${["'self'", ...new Set(formTargets)].join(" ")}`,
      "frame-ancestors 'none'",
      "base-uri 'none'",
    ].join(";"),
  );
}

function failPage(error: unknown, res: Response, next: NextFunction, logger: Logger): void {
  if (error instanceof ApiError && error.status === 401) {
    return void sendPage(res, 401, loginPage({ error: error.message, next: SETUP_PAGE_PATH }));
  }
  if (error instanceof ApiError)
    return void sendPage(res, error.status, messagePage("Not allowed", error.message, false));
  if (isDatabaseUnavailable(error)) {
    logger.warn("the database is unreachable", { event: "ui.unavailable", route: res.locals.route });
    res.set("Retry-After", String(RETRY_AFTER_SECONDS));
    return void sendPage(
      res,
      503,
      messagePage("Unavailable", "the database is unreachable; retry later", false),
    );
  }
  next(error);
}
