// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} is the configuration substitution syntax
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../../shared/config/load.ts";

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
  return loadConfig({ dir, env: { HOOK: "h", CODEHOST_TOKEN: "t-default", BOT_TOKEN: "t-bot" } });
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
        message: expect.stringContaining('add "codehost: { token: ${ENV_NAME} }" to daemon.yaml'),
      },
    ]);
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
});
