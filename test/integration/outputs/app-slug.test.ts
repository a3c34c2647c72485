import { PassThrough } from "node:stream";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { knownAppSlug } from "../../../shared/codehost/app-slug.ts";
import { botName } from "../../../shared/config/authors.ts";
import type { ConfigSnapshot } from "../../../shared/config/types.ts";
import { createLogger } from "../../../shared/logger.ts";
import { postReaction } from "../../../worker/outputs/reactions.ts";
import { learnAppSlug } from "../../../worker/outputs/tokens.ts";
import { type FakeGitHub, startFakeGitHub } from "../../e2e/outputs/fake-github.ts";
import { rsaKeyPair } from "../../e2e/outputs/github-app-bed.ts";

/**
 * Comment commands address the App svc acts as by its slug (`@<slug> review`): the worker reads it
 * once with `GET /app` as the App, from a loopback GitHub that knows only the App's public key.
 */
describe("the GitHub App's slug is the default bot name", () => {
  const key = rsaKeyPair();
  let github: FakeGitHub;
  // an inline key never reaches the database: no pool is needed to read it
  const pool = undefined as unknown as pg.Pool;
  const config = (extra: Record<string, unknown> = {}) =>
    ({
      dir: "/nonexistent",
      codehost: {
        apiUrl: "",
        principals: {},
        app: { id: 6060, privateKey: { kind: "inline", value: key.privateKey } },
        ...extra,
      },
    }) as unknown as ConfigSnapshot;

  beforeAll(async () => {
    github = await startFakeGitHub({
      users: {},
      apps: [
        {
          id: 6060,
          slug: "acme-review",
          publicKey: key.publicKey,
          installations: [{ id: 61, account: "acme", repos: ["acme/hello"] }],
        },
      ],
    });
  });
  afterAll(async () => {
    await github?.close();
  });

  it("learns the slug with the App's own JWT, and commands answer to it", async () => {
    const snapshot = config({ apiUrl: github.url });
    expect(botName(snapshot)).toBe("svc");
    expect(await learnAppSlug(pool, snapshot)).toBeUndefined();
    expect(botName(snapshot)).toBe("acme-review");
    expect(github.requests.filter((r) => r.path === "/app")).toHaveLength(1);
  });

  it("keeps codehost.bot_name for commands when the operator set one, and still learns the slug", async () => {
    const before = github.requests.filter((r) => r.path === "/app").length;
    const snapshot = config({ apiUrl: github.url, botName: "reviewer" });
    expect(await learnAppSlug(pool, snapshot)).toBeUndefined();
    expect(botName(snapshot)).toBe("reviewer");
    // the slug is how svc knows its own reviews (`<slug>[bot]`, worker/outputs/codehost.ts)
    expect(knownAppSlug(6060)).toBe("acme-review");
    expect(github.requests.filter((r) => r.path === "/app").length).toBe(before + 1);
  });

  it("says why when GitHub refuses the App, and commands keep answering to svc", async () => {
    const other = rsaKeyPair();
    const snapshot = {
      ...config({ apiUrl: github.url }),
      codehost: {
        apiUrl: github.url,
        principals: {},
        app: { id: 7070, privateKey: { kind: "inline", value: other.privateKey } },
      },
    } as unknown as ConfigSnapshot;
    expect(await learnAppSlug(pool, snapshot)).toMatch(/GitHub App 7070: GET \/app answered 401/);
    expect(botName(snapshot)).toBe("svc");
  });

  it("answers a command with its reaction as the App, through the repository's installation token", async () => {
    github.comments.set("acme/hello#1", [
      { id: 555, body: "@acme-review review", user: { login: "member", id: 1, type: "User" } },
    ]);
    const logger = createLogger({ role: "worker", format: "json", stream: new PassThrough() });
    await postReaction(
      { pool, config: config({ apiUrl: github.url }), logger },
      { repo: "acme/hello", commentId: 555, content: "eyes" },
    );
    expect(github.reactions.get(555)).toEqual([{ content: "eyes", user: "acme-review[bot]" }]);
  });
});
