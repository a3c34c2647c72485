// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} is the configuration substitution syntax
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../../shared/config/load.ts";

const temps: string[] = [];
afterEach(async () => {
  await Promise.all(temps.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

const SIGNING = `whsec_${randomBytes(32).toString("base64")}`;

async function load(sources: string, trigger = "trigger:\n  codehost: [merge_request.open]\n") {
  const dir = await mkdtemp(join(tmpdir(), "svc-gitlab-source-"));
  temps.push(dir);
  const files: Record<string, string> = {
    "daemon.yaml": `webhooks:\n  sources:\n${sources}targets:\n  local: { runtime: command, command: ["/bin/cat"] }\nask:\n  targets: [local]\n`,
    "agents/helper/PERSONA.md": "---\nname: helper\ndescription: Helps.\n---\nYou help.\n",
    "pipelines/review.yaml": `version: 1.0.0\nagent: helper\ntargets: [local]\ninstructions: review\n${trigger}`,
  };
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), text);
  }
  return loadConfig({ dir, env: { GL_TOKEN: "gl-secret", GL_SIGNING: SIGNING } });
}

function problems(result: Awaited<ReturnType<typeof load>>) {
  return result.problems.map((p) => ({
    code: p.code,
    path: p.path,
    severity: p.severity,
    message: p.message,
  }));
}

describe("webhooks.sources.<name> with verify: gitlab", () => {
  it("reads the secret token and an optional signing token, inline or stored, and serves trigger.codehost", async () => {
    const result = await load(
      `    gl: { verify: gitlab, secret: "\${GL_TOKEN}", signing_secret: "\${GL_SIGNING}" }
    gl2: { verify: gitlab, secret_ref: webhook/gl2, signing_secret_ref: webhook/gl2/signing-secret }
    gl3: { verify: gitlab, secret: plain }
`,
    );
    if (!result.ok) throw new Error(JSON.stringify(result.problems));
    expect(result.problems).toEqual([]);
    expect(result.config.webhooks.sources).toEqual({
      gl: {
        name: "gl",
        verify: "gitlab",
        secret: { kind: "inline", value: "gl-secret" },
        signingSecret: { kind: "inline", value: SIGNING },
      },
      gl2: {
        name: "gl2",
        verify: "gitlab",
        secret: { kind: "stored", name: "webhook/gl2" },
        signingSecret: { kind: "stored", name: "webhook/gl2/signing-secret" },
      },
      gl3: { name: "gl3", verify: "gitlab", secret: { kind: "inline", value: "plain" } },
    });
  });

  it("refuses a signing token that is not whsec_<base64>, without quoting it", async () => {
    const result = await load(
      `    gl: { verify: gitlab, secret: x, signing_secret: "not-a-signing-token" }\n`,
    );
    expect(result.ok).toBe(false);
    const found = problems(result).find((p) => p.path === "webhooks.sources.gl.signing_secret");
    expect(found).toMatchObject({ code: "invalid_value", severity: "error" });
    expect(found?.message).toContain('"whsec_" followed by the base64');
    expect(JSON.stringify(result.problems)).not.toContain("not-a-signing-token");
  });

  it("refuses both signing keys at once and a stored name other than webhook/<name>/signing-secret", async () => {
    const both = await load(
      `    gl: { verify: gitlab, secret: x, signing_secret: "${SIGNING}", signing_secret_ref: webhook/gl/signing-secret }\n`,
    );
    expect(problems(both)).toContainEqual(
      expect.objectContaining({ code: "secret_source_conflict", path: "webhooks.sources.gl" }),
    );
    const misnamed = await load(`    gl: { verify: gitlab, secret: x, signing_secret_ref: webhook/gl }\n`);
    const found = problems(misnamed).find((p) => p.code === "secret_ref_name");
    expect(found?.message).toContain('"webhook/gl/signing-secret"');
    expect(found?.message).toContain("svc setup webhook gl --signing --secret-env <ENV_NAME>");
  });

  it("refuses a signing token on a source that does not verify GitLab's deliveries", async () => {
    const result = await load(
      `    github: { verify: codehost, secret: x, signing_secret: "${SIGNING}" }\n`,
      "trigger:\n  codehost: [pull_request.opened]\n",
    );
    expect(result.ok).toBe(false);
    const found = problems(result).find((p) => p.path === "webhooks.sources.github.signing_secret");
    expect(found?.message).toContain('only a "verify: gitlab" source checks it');
  });

  it("names trigger.codehost when a bearer trigger points at a gitlab source", async () => {
    const result = await load(`    gl: { verify: gitlab, secret: x }\n`, "trigger:\n  webhook: [gl]\n");
    const found = problems(result).find((p) => p.code === "verify_kind_mismatch");
    expect(found?.message).toContain("a gitlab source serves trigger.codehost");
  });

  it("trigger.codehost without a codehost or gitlab source says either would do", async () => {
    const result = await load(`    hook: { verify: bearer, secret: x }\n`);
    const found = problems(result).find((p) => p.code === "webhook_source_missing");
    expect(found?.message).toContain("has no codehost or gitlab source");
  });
});
