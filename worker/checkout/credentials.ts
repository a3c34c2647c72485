import type pg from "pg";
import { isNotInstalled } from "../../shared/codehost/app-tokens.ts";
import { checkoutRoute, gitAuthEnv, readAccessNeeded, tokenUser } from "../../shared/codehost/git-auth.ts";
import type { ConfigSnapshot, Pipeline } from "../../shared/config/types.ts";
import { PublishError } from "../outputs/attempt.ts";
import { codehostIdentity, installationToken, secretValue } from "../outputs/tokens.ts";

/**
 * How git authenticates one fetch: an HTTP header scoped to the code host's origin, handed to git
 * in its environment for that command only (`GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_0`/
 * `GIT_CONFIG_VALUE_0`). Never argv (every user of the host reads it), never a URL (git writes
 * those into configs and messages), never a file: no `.git/config`, credential store or worktree
 * file of a checkout or a mirror ever holds it.
 */
export interface GitAuth {
  /** the URL git is given: the configured one without any user:password part */
  url: string;
  /** extra environment of the git commands that reach `url` */
  env: Record<string, string>;
  /** who is asking, for messages: `codehost.app (GitHub App 4242)`, `codehost.principal.bot`, `anonymous` */
  identity: string;
  /** what the identity needs, for a refusal's message */
  needs: string;
  /** the secret in `env`, for the run's redaction and for grouping fetches by identity */
  secret?: string;
}

/** The checkout's permission: an installation token that can read the repository's contents, nothing else. */
export const CHECKOUT_PERMISSIONS = { contents: "read" } as const;

export class CheckoutAuthError extends Error {}

/**
 * The credential a run's checkout of `repo` fetches with: the pipeline's code-host identity (an
 * App's installation token for that one repository, contents: read; a principal's or the default
 * token), or a user:password the operator wrote into `clone_url`. A URL on another origin than the
 * code host's gets no identity. An App that is not installed on the repository fetches anonymously
 * (a public repository needs nothing); the refusal of a private one then names the App.
 */
export async function checkoutAuth(
  deps: { pool: pg.Pool; config: Readonly<ConfigSnapshot> },
  pipeline: Pipeline,
  repo: string,
  cloneUrl: string,
): Promise<GitAuth> {
  const route = checkoutRoute(repo, deps.config, cloneUrl);
  if (route.kind === "pasted") {
    const { url, env, secret } = route;
    return {
      url,
      env,
      secret,
      identity: `the credential in repos.${repo}.clone_url`,
      needs: "read access to the repository",
    };
  }
  const anonymous: GitAuth = {
    url: cloneUrl,
    env: {},
    identity: "anonymous",
    needs:
      route.kind === "anonymous" && route.why === "not_http"
        ? "read access to the repository"
        : "a code-host identity (codehost.app or codehost.token) that can read the repository",
  };
  if (route.kind === "anonymous") return anonymous;
  const { base } = route;
  const identity = codehostIdentity(deps.config as ConfigSnapshot, pipeline);
  if (!identity) return anonymous;
  if (identity.credential.token) {
    const token = await secretValue(identity.credential.token, deps.pool, deps.config);
    return {
      url: cloneUrl,
      env: gitAuthEnv(base, tokenUser(deps.config), token),
      identity: identity.name,
      needs: readAccessNeeded(deps.config, repo),
      secret: token,
    };
  }
  const app = identity.credential.app;
  const named = `${identity.name} (GitHub App ${app.id})`;
  try {
    const { token } = await installationToken(app, repo, deps.pool, deps.config as ConfigSnapshot, {
      restrict: true,
      permissions: CHECKOUT_PERMISSIONS,
    });
    return {
      url: cloneUrl,
      env: gitAuthEnv(base, "x-access-token", token),
      identity: named,
      needs: `the App installed on ${repo} with the "Contents: read" permission`,
      secret: token,
    };
  } catch (error) {
    if (!(error instanceof PublishError)) throw error;
    // not installed on the repository: it may be public, which needs no identity at all
    if (isNotInstalled(error)) {
      return {
        ...anonymous,
        identity: `anonymous (${named} is not installed on ${repo})`,
        needs: `the App installed on ${repo} with the "Contents: read" permission`,
      };
    }
    throw new CheckoutAuthError(`${named} could not get a token to read ${repo}: ${error.message}`);
  }
}
