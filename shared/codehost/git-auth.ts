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
