import type pg from "pg";
import { describe, expect, it } from "vitest";
import type { ConfigSnapshot, Pipeline } from "../../../shared/config/types.ts";
import { checkoutAuth } from "../../../worker/checkout/credentials.ts";

const TOKEN = "ghp_checkoutAuthDefaultToken01";
const pipeline = {
  principals: {},
  checkout: { submodules: false, lfs: false, paths: [] },
} as unknown as Pipeline;

function config(repos: ConfigSnapshot["repos"], apiUrl = "https://ghe.example.com/api/v3"): ConfigSnapshot {
  return {
    dir: "/nowhere",
    repos,
    codehost: { apiUrl, token: { kind: "inline", value: TOKEN }, principals: {} },
  } as unknown as ConfigSnapshot;
}

const deps = (repos: ConfigSnapshot["repos"], apiUrl?: string) => ({
  pool: undefined as unknown as pg.Pool,
  config: config(repos, apiUrl),
});

/** The Basic credential the header carries, decoded. */
const credential = (env: Record<string, string>) =>
  Buffer.from(env.GIT_CONFIG_VALUE_0!.replace(/^Authorization: Basic /, ""), "base64").toString("utf8");

describe("the credential of a checkout's fetch", () => {
  it("a URL under the code host's base gets the identity's token as a header scoped to that base, in git's environment only", async () => {
    const url = "https://ghe.example.com/acme/widgets.git";
    const auth = await checkoutAuth(
      deps({ "acme/widgets": { cloneUrl: url, configured: false } }),
      pipeline,
      "acme/widgets",
      url,
    );
    expect(auth.url).toBe(url);
    expect(auth.identity).toBe("codehost.token");
    expect(auth.env.GIT_CONFIG_COUNT).toBe("1");
    expect(auth.env.GIT_CONFIG_KEY_0).toBe("http.https://ghe.example.com/.extraheader");
    expect(credential(auth.env)).toBe(`x-access-token:${TOKEN}`);
    expect(auth.url).not.toContain(TOKEN);
  });

  it("another host, a repository with auth: none, and no code host get nothing", async () => {
    const other = "https://git.example.org/acme/widgets.git";
    const elsewhere = await checkoutAuth(
      deps({ "acme/widgets": { cloneUrl: other, configured: true } }),
      pipeline,
      "acme/widgets",
      other,
    );
    expect(elsewhere).toMatchObject({ url: other, env: {}, identity: "anonymous" });
    const url = "https://ghe.example.com/acme/widgets.git";
    const none = await checkoutAuth(
      deps({ "acme/widgets": { cloneUrl: url, configured: false, auth: "none" } }),
      pipeline,
      "acme/widgets",
      url,
    );
    expect(none).toMatchObject({ env: {}, identity: "anonymous" });
    // a host whose URL merely starts like the code host's is another host
    const lookalike = "https://ghe.example.com.evil.test/acme/widgets.git";
    expect((await checkoutAuth(deps({}), pipeline, "acme/widgets", lookalike)).env).toEqual({});
  });

  it("a user:password written into clone_url is taken out of the URL and sent as the header", async () => {
    const url = "https://bot:s3cret-value@git.example.org/acme/widgets.git";
    const auth = await checkoutAuth(deps({}), pipeline, "acme/widgets", url);
    expect(auth.url).toBe("https://git.example.org/acme/widgets.git");
    expect(auth.env.GIT_CONFIG_KEY_0).toBe("http.https://git.example.org/.extraheader");
    expect(credential(auth.env)).toBe("bot:s3cret-value");
    expect(auth.secret).toBe("s3cret-value");
  });
});
