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
