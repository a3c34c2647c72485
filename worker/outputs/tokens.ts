import { join } from "node:path";
import type pg from "pg";
import { readSecrets } from "../../db/secrets.ts";
import { rememberAppSlug, rememberGitlabUser } from "../../shared/codehost/app-slug.ts";
import { AppAuthError, appTokens, type TokenOptions } from "../../shared/codehost/app-tokens.ts";
import { gitlabClient } from "../../shared/codehost/gitlab.ts";
import { codehostPrincipalId } from "../../shared/config/outputs.ts";
import type { SecretSource } from "../../shared/config/secret-source.ts";
import type { CodehostApp, CodehostCredential, ConfigSnapshot, Pipeline } from "../../shared/config/types.ts";
import { readInstanceKey } from "../../shared/secrets/instance-key.ts";
import { PublishError } from "./attempt.ts";

/**
 * The identity a pipeline publishes as: `principal` → `principals.<binding>` →
 * `codehost.principals.<id>`, else the default `codehost.token`. Values are resolved when first
 * used (a stored one with the instance key) and never logged.
 */
export async function secretValue(
  source: SecretSource,
  pool: pg.Pool,
  config: Pick<ConfigSnapshot, "dir">,
): Promise<string> {
  if (source.kind === "inline") return source.value;
  const key = await readInstanceKey(process.env.SVC_INSTANCE_KEY_FILE ?? join(config.dir, "instance.key"));
  const value = (await readSecrets(pool, key, [source.name])).get(source.name);
  if (value === undefined) {
    throw new PublishError({
      kind: "final",
      status: "secret_missing",
      message: `the stored secret ${source.name} does not exist - store it with svc setup and restart`,
    });
  }
  return value;
}

export interface CodehostIdentity {
  /** `codehost.principal.<id>`, `codehost.app` or `codehost.token` for the default identity */
  name: string;
  credential: CodehostCredential;
}

export function codehostIdentity(config: ConfigSnapshot, pipeline: Pipeline): CodehostIdentity | undefined {
  const id = pipeline.principal ? codehostPrincipalId(pipeline.principals[pipeline.principal]) : undefined;
  if (id !== undefined) {
    const principal = config.codehost?.principals[id];
    return principal ? { name: `codehost.principal.${id}`, credential: principal } : undefined;
  }
  if (config.codehost?.app) return { name: "codehost.app", credential: { app: config.codehost.app } };
  return config.codehost?.token
    ? { name: "codehost.token", credential: { token: config.codehost.token } }
    : undefined;
}

/**
 * The token an identity acts with on `repo`: a long-lived token as configured, or an App's
 * installation token for the repository's installation (cached per installation, see
 * shared/codehost/app-tokens.ts). `restrict` narrows an installation token to that one repository.
 */
export async function identityToken(
  credential: CodehostCredential,
  repo: string,
  pool: pg.Pool,
  config: ConfigSnapshot,
  options: TokenOptions = {},
): Promise<string> {
  if (credential.token) return secretValue(credential.token, pool, config);
  return (await installationToken(credential.app, repo, pool, config, options)).token;
}

/**
 * Learns the slug of the App svc acts as (`GET /app`), so comment commands address it by default
 * (shared/config/authors.ts botName). A failure is returned, not thrown: commands then answer to
 * `svc` until the next start, and the worker says why.
 */
export async function learnAppSlug(pool: pg.Pool, config: ConfigSnapshot): Promise<string | undefined> {
  if (config.codehost?.kind === "gitlab") return learnGitlabUser(pool, config);
  const app = config.codehost?.app;
  // learnt with bot_name set too: the App's `<slug>[bot]` is how svc knows its own reviews
  if (!app) return undefined;
  try {
    const privateKey = await secretValue(app.privateKey, pool, config);
    const apiUrl = config.codehost?.apiUrl ?? "https://api.github.com";
    const { slug } = await appTokens({ apiUrl, appId: app.id, privateKey }).asApp<{ slug: string }>(
      "GET",
      "/app",
    );
    rememberAppSlug(app.id, slug);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

/** learnAppSlug for GitLab: the username of the token's user (`GET /user`). */
async function learnGitlabUser(pool: pg.Pool, config: ConfigSnapshot): Promise<string | undefined> {
  const codehost = config.codehost!;
  if (!codehost.token || codehost.botName) return undefined;
  try {
    const token = await secretValue(codehost.token, pool, config);
    const user = await gitlabClient({ apiUrl: codehost.apiUrl, token }).Users.showCurrentUser();
    rememberGitlabUser(codehost.apiUrl, user.username);
    return undefined;
  } catch (error) {
    return `GitLab at ${codehost.apiUrl}: GET /user failed: ${(error as Error).message}`;
  }
}

export async function installationToken(
  app: CodehostApp,
  repo: string,
  pool: pg.Pool,
  config: ConfigSnapshot,
  options: TokenOptions = {},
): Promise<{ token: string; expiresAt: number }> {
  const privateKey = await secretValue(app.privateKey, pool, config);
  const apiUrl = config.codehost?.apiUrl ?? "https://api.github.com";
  try {
    return await appTokens({ apiUrl, appId: app.id, privateKey }).tokenFor(repo, options);
  } catch (error) {
    if (!(error instanceof AppAuthError)) throw error;
    // a missing installation or a refused key does not heal by retrying the same delivery soon;
    // GitHub being down (5xx, no answer) does
    const final = error.status !== undefined && error.status < 500;
    throw new PublishError({ kind: final ? "final" : "retry", status: "app_auth", message: error.message });
  }
}
