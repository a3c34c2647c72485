// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} is the configuration substitution syntax
import { generateKeyPairSync } from "node:crypto";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../../shared/config/load.ts";

const APP_KEY = generateKeyPairSync("rsa", {
  modulusLength: 2048,
  privateKeyEncoding: { type: "pkcs8", format: "pem" },
  publicKeyEncoding: { type: "spki", format: "pem" },
}).privateKey;

const temps: string[] = [];
afterEach(async () => {
  await Promise.all(temps.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

const BASE_DAEMON = `webhooks:
  sources:
    hook: { verify: bearer, secret: "\${HOOK}" }
targets:
  local: { runtime: command, command: ["/bin/cat"] }
ask:
  targets: [local]
`;

function reviewPipeline(extra = ""): string {
  return `version: 1.0.0
agent: helper
${extra}trigger:
  webhook: [hook]
targets: [local]
instructions: review
result:
  schema:
    type: object
    properties:
      review: { $ref: svc://schemas/codehost/review/v1 }
outputs:
  review: { handler: codehost.review }
`;
}

async function load(daemon: string, pipeline: string) {
  const dir = await mkdtemp(join(tmpdir(), "svc-outputs-config-"));
  temps.push(dir);
  const files: Record<string, string> = {
    "daemon.yaml": daemon,
    "agents/helper/PERSONA.md": "---\nname: helper\ndescription: Helps.\n---\nYou help.\n",
    "pipelines/review.yaml": pipeline,
  };
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), text);
  }
  return loadConfig({
    dir,
    env: { HOOK: "h", CODEHOST_TOKEN: "t-default", BOT_TOKEN: "t-bot", APP_ID: "123456", APP_KEY },
  });
}

describe("publishing configuration", () => {
  it("loads codehost, chat api_url and the breaker limits", async () => {
    const result = await load(
      `${BASE_DAEMON}codehost:
  api_url: https://ghe.example.com/api/v3
  token: \${CODEHOST_TOKEN}
  principals:
    "42": { token_ref: codehost/principal/42 }
channels:
  chat:
    api_url: https://chat.example.com/api
    bots:
      releasebot: { token: "\${BOT_TOKEN}" }
queue:
  circuit_breaker:
    failures: 3
    cooldown: 10m
`,
      reviewPipeline("principals:\n  reviewer: codehost.principal.42\nprincipal: reviewer\n"),
    );
    if (!result.ok) throw new Error(JSON.stringify(result.problems));
    expect(result.config.codehost).toEqual({
      apiUrl: "https://ghe.example.com/api/v3",
      token: { kind: "inline", value: "t-default" },
      principals: { "42": { token: { kind: "stored", name: "codehost/principal/42" } } },
    });
    expect(result.config.channels.chat.apiUrl).toBe("https://chat.example.com/api/");
    expect(result.config.queue.circuitBreaker).toEqual({ failures: 3, cooldownMs: 600_000 });
  });

  it("an unknown principal id names the file, the key and the fix", async () => {
    const result = await load(
      `${BASE_DAEMON}codehost:\n  token: \${CODEHOST_TOKEN}\n  principals:\n    "42": { token: "\${CODEHOST_TOKEN}" }\n`,
      reviewPipeline("principals:\n  reviewer: codehost.principal.99\nprincipal: reviewer\n"),
    );
    expect(result.ok).toBe(false);
    expect(result.problems).toMatchObject([
      {
        file: "pipelines/review.yaml",
        path: "principals.reviewer",
        code: "unknown_principal",
        message: expect.stringContaining('add "codehost: { principals: { "99": { token: ${ENV_NAME} } } }"'),
      },
    ]);
  });

  it("a code-host handler with no codehost identity is a load error", async () => {
    const result = await load(BASE_DAEMON, reviewPipeline());
    expect(result.ok).toBe(false);
    expect(result.problems).toMatchObject([
      {
        file: "pipelines/review.yaml",
        path: "outputs.review.handler",
        code: "codehost_identity_missing",
        message: expect.stringContaining(
          'add "codehost: { app: { id: <App ID>, private_key: ${GITHUB_APP_PRIVATE_KEY} } }" (a GitHub App) or "codehost: { token: ${ENV_NAME} }" to daemon.yaml',
        ),
      },
    ]);
  });

  it("codehost.app is an identity: an App id and its PEM key, inline or stored; principals may be Apps", async () => {
    const result = await load(
      `${BASE_DAEMON}codehost:
  app:
    id: "\${APP_ID}"
    private_key: "\${APP_KEY}"
  principals:
    reviewer:
      app: { id: 99, secret_ref: codehost/principal/reviewer/app-private-key }
`,
      reviewPipeline(),
    );
    expect(result.problems).toEqual([]);
    const codehost = result.ok ? result.config.codehost : undefined;
    expect(codehost?.app).toEqual({ id: 123456, privateKey: { kind: "inline", value: APP_KEY } });
    expect(codehost?.token).toBeUndefined();
    expect(codehost?.principals.reviewer).toEqual({
      app: { id: 99, privateKey: { kind: "stored", name: "codehost/principal/reviewer/app-private-key" } },
    });
  });

  it("a bad App key, a non-numeric App id, or an App beside a token is refused, naming the key and never quoting the key", async () => {
    const badKey = await load(
      `${BASE_DAEMON}codehost:\n  app: { id: 7, private_key: "-----BEGIN RSA PRIVATE KEY-----\\nnot a key\\n-----END RSA PRIVATE KEY-----" }\n`,
      reviewPipeline(),
    );
    expect(badKey.problems[0]).toMatchObject({
      path: "codehost.app.private_key",
      code: "invalid_value",
      message: expect.stringContaining("is not an RSA private key in PEM form"),
    });
    expect(JSON.stringify(badKey.problems)).not.toContain("not a key");
    const badId = await load(
      `${BASE_DAEMON}codehost:\n  app: { id: my-app, private_key: "\${APP_KEY}" }\n`,
      reviewPipeline(),
    );
    expect(badId.problems[0]).toMatchObject({
      path: "codehost.app.id",
      code: "invalid_value",
      message: expect.stringContaining("must be the App's numeric id"),
    });
    const both = await load(
      `${BASE_DAEMON}codehost:\n  token: x\n  app: { id: 7, private_key: "\${APP_KEY}" }\n`,
      reviewPipeline(),
    );
    expect(both.problems[0]).toMatchObject({
      path: "codehost.app",
      code: "secret_source_conflict",
      message: expect.stringContaining("keep one"),
    });
    expect(JSON.stringify([badId.problems, both.problems])).not.toContain("PRIVATE KEY");
  });

  it("a non-URL api_url is refused with an example", async () => {
    const result = await load(
      `${BASE_DAEMON}codehost:\n  api_url: ghe.example.com\n  token: x\n`,
      reviewPipeline(),
    );
    expect(result.problems).toMatchObject([
      {
        file: "daemon.yaml",
        path: "codehost.api_url",
        code: "invalid_value",
        message: expect.stringContaining("https://"),
      },
    ]);
  });

  describe("sticky, progress and resolve_outdated beside handler", () => {
    const DAEMON = `${BASE_DAEMON}codehost:\n  token: \${CODEHOST_TOKEN}\n`;
    const withBinding = (binding: string, handler = "codehost.review", schema = "codehost/review/v1") =>
      reviewPipeline()
        .replace(
          "review: { $ref: svc://schemas/codehost/review/v1 }",
          `review: { $ref: svc://schemas/${schema} }`,
        )
        .replace("review: { handler: codehost.review }", `review: { handler: ${handler}${binding} }`);

    it("are read onto the binding", async () => {
      const result = await load(
        DAEMON,
        withBinding(", sticky: true, progress: true, resolve_outdated: true"),
      );
      if (!result.ok) throw new Error(JSON.stringify(result.problems));
      expect(result.config.pipelines.review!.outputs.review).toEqual({
        handler: "codehost.review",
        sticky: true,
        progress: true,
        resolveOutdated: true,
      });
    });

    it("a comment takes sticky and progress; false is the same as leaving them out", async () => {
      const result = await load(
        DAEMON,
        withBinding(", sticky: true, progress: false", "codehost.comment", "codehost/comment/v1"),
      );
      if (!result.ok) throw new Error(JSON.stringify(result.problems));
      expect(result.config.pipelines.review!.outputs.review).toEqual({
        handler: "codehost.comment",
        sticky: true,
      });
    });

    it.each([
      [
        ", resolve_outdated: true",
        "codehost.comment",
        "codehost/comment/v1",
        "outputs.review.resolve_outdated",
        '"outputs.review.resolve_outdated" is refused - codehost.comment does not take it, only codehost.review; delete it',
      ],
      [
        ", sticky: true",
        "codehost.review-comment-reply",
        "codehost/review-comment-reply/v1",
        "outputs.review.sticky",
        '"outputs.review.sticky" is refused - codehost.review-comment-reply does not take it, only codehost.comment and codehost.review; delete it',
      ],
      [
        ", progress: true",
        "codehost.review",
        "codehost/review/v1",
        "outputs.review.progress",
        '"outputs.review.progress" needs "outputs.review.sticky: true" - the progress note is written into the sticky comment; add sticky: true or delete progress',
      ],
      [
        ", sticky: yes please",
        "codehost.review",
        "codehost/review/v1",
        "outputs.review.sticky",
        '"outputs.review.sticky" must be a boolean (true or false)',
      ],
    ])("%s on %s is refused, naming the key and the fix", async (binding, handler, schema, path, message) => {
      const result = await load(DAEMON, withBinding(binding, handler, schema));
      expect(result.ok).toBe(false);
      expect(result.problems).toMatchObject([
        { file: "pipelines/review.yaml", path, message: `pipelines/review.yaml: ${message}` },
      ]);
    });

    it("server.public_url must be an http(s) URL; its trailing slash is dropped", async () => {
      const good = await load(`server:\n  public_url: https://svc.example.com/\n${DAEMON}`, withBinding(""));
      if (!good.ok) throw new Error(JSON.stringify(good.problems));
      expect(good.config.server.publicUrl).toBe("https://svc.example.com");
      const bad = await load(`server:\n  public_url: svc.example.com\n${DAEMON}`, withBinding(""));
      expect(bad.problems).toMatchObject([
        {
          file: "daemon.yaml",
          path: "server.public_url",
          code: "invalid_value",
          message:
            'daemon.yaml: "server.public_url" must be an http(s) URL without query or fragment, e.g. https://svc.example.com (got "svc.example.com")',
        },
      ]);
    });
  });
});
