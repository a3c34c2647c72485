import { codehostWebBase } from "../config/daemon/repos.ts";
import type { ConfigSnapshot } from "../config/types.ts";

/**
 * The environment that hands git one HTTP header for URLs under `base` only, for one command:
 * `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_0`/`GIT_CONFIG_VALUE_0`. Never argv (every user of the host
 * reads it), never a URL, never a file. `user` is `x-access-token` for GitHub's tokens.
 */
export function gitAuthEnv(base: string, user: string, password: string): Record<string, string> {
  return {
    GIT_CONFIG_COUNT: "1",
    // scoped to the code host's base URL: a redirect or a submodule on another host never receives it
    GIT_CONFIG_KEY_0: `http.${base.replace(/\/+$/, "")}/.extraheader`,
    GIT_CONFIG_VALUE_0: `Authorization: Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`,
  };
}

/**
 * The Basic user name a code host takes an access token with over git's HTTP: GitHub's
 * `x-access-token`; GitLab takes any name with the token as the password, `oauth2` in its docs.
 */
export function tokenUser(config: Pick<ConfigSnapshot, "codehost">): string {
  return config.codehost?.kind === "gitlab" ? "oauth2" : "x-access-token";
}

/** What an identity's token needs to fetch `repo`, for a refusal's message. */
export function readAccessNeeded(config: Pick<ConfigSnapshot, "codehost">, repo: string): string {
  return config.codehost?.kind === "gitlab"
    ? `read access to ${repo} (a project, group or personal access token with the read_repository or api scope, its user at least a reporter of the project)`
    : `read access to ${repo} (a fine-grained token with "Contents: read" on it, or a classic token with the repo scope)`;
}

/**
 * A clone URL with a `user:password` part, as an operator may paste one into `clone_url`: the URL
 * without it, and the header environment that sends it instead (git would write a URL's
 * credential into configs and messages). Undefined when the URL carries none.
 */
export function urlCredential(
  url: URL,
): { url: string; env: Record<string, string>; secret: string } | undefined {
  if (!url.username && !url.password) return undefined;
  const user = decodeURIComponent(url.username);
  const password = decodeURIComponent(url.password);
  const clean = new URL(url);
  clean.username = "";
  clean.password = "";
  return {
    url: clean.toString(),
    env: gitAuthEnv(url.origin, user || "x-access-token", password),
    secret: password || user,
  };
}

/**
 * What a checkout of `repo` hands git, before any identity's token is read: nothing (a URL that is
 * not http(s), one off the code host's base, `auth: none`, no code host), the credential pasted
 * into its `clone_url`, or the code-host identity's token as a header under `base`. The worker's
 * checkout (worker/checkout/credentials.ts) and `svc doctor` (cli/doctor/repositories.ts) both
 * decide by it, so what doctor reads is what a run fetches with.
 */
export type CheckoutRoute =
  | { kind: "anonymous"; url: string; why: "not_http" | "off_base" | "auth_none" }
  | { kind: "pasted"; url: string; env: Record<string, string>; secret: string }
  | { kind: "identity"; url: string; base: string };

export function checkoutRoute(
  repo: string,
  config: Pick<ConfigSnapshot, "repos" | "codehost">,
  cloneUrl = config.repos[repo]?.cloneUrl ?? "",
): CheckoutRoute {
  let parsed: URL | undefined;
  try {
    parsed = new URL(cloneUrl);
  } catch {
    // an absolute path: a local repository, no credential
  }
  if (!parsed || (parsed.protocol !== "http:" && parsed.protocol !== "https:"))
    return { kind: "anonymous", url: cloneUrl, why: "not_http" };
  const pasted = urlCredential(parsed);
  if (pasted) return { kind: "pasted", ...pasted };
  // only a URL under the code host's own base (github.com for api.github.com; GitHub Enterprise's
  // origin) is given the identity: another host never receives it
  const base = config.codehost ? codehostWebBase(config.codehost.apiUrl) : undefined;
  if (!base || !cloneUrl.startsWith(`${base}/`)) return { kind: "anonymous", url: cloneUrl, why: "off_base" };
  if (config.repos[repo]?.auth === "none") return { kind: "anonymous", url: cloneUrl, why: "auth_none" };
  return { kind: "identity", url: cloneUrl, base };
}
