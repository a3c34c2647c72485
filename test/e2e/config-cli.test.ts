import { spawn } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { join } from "node:path";
import { describe, expect, inject, it } from "vitest";

const ROOT = join(import.meta.dirname, "../..");
const NODE = join(ROOT, "node_modules/.bin/node");
const FIXTURES = join(ROOT, "test/fixtures/config");
/** the reference configuration's GitHub App key: parsed when it loads, so a real PEM */
const APP_PRIVATE_KEY = generateKeyPairSync("rsa", {
  modulusLength: 2048,
  privateKeyEncoding: { type: "pkcs8", format: "pem" },
  publicKeyEncoding: { type: "spki", format: "pem" },
}).privateKey;
const REFERENCE_ENV = {
  DEPLOY_HOOK_TOKEN: "e2e-deploy",
  LINEAR_WEBHOOK_SECRET: "e2e-linear",
  OPENAI_KEY_A: "e2e-a",
  OPENAI_KEY_B: "e2e-b",
  CHAT_BOT_TOKEN: "e2e-chat",
  CI_TOKEN: "e2e-ci",
  GITHUB_APP_ID: "123456",
  GITHUB_APP_PRIVATE_KEY: APP_PRIVATE_KEY,
};

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The real CLI as an operator runs it, in a child process with a controlled environment. */
function svc(args: string[], env: Record<string, string> = {}): Promise<Run> {
  const base: Record<string, string> = { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp" };
  return new Promise((resolve, reject) => {
    const child = spawn(NODE, [join(ROOT, "bin/svc.js"), ...args], { cwd: ROOT, env: { ...base, ...env } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.stderr.on("data", (chunk) => (stderr += chunk));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

describe("svc config validate", () => {
  it("exits 0 with a one-line summary on the reference configuration in examples/", async () => {
    const run = await svc(["config", "validate"], {
      ...REFERENCE_ENV,
      SVC_CONFIG_DIR: join(ROOT, "examples/reference/.svc"),
    });
    expect(run.code).toBe(0);
    expect(run.stdout.trim()).toMatch(/^configuration valid: 5 pipelines, 3 sources, 3 targets \(/);
  });

  it("exits 0 on the grown valid fixture, given by --dir", async () => {
    const run = await svc(["config", "validate", "--dir", join(FIXTURES, "valid")], REFERENCE_ENV);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("configuration valid: 5 pipelines, 3 sources, 3 targets");
  });

  it("exits 1 and lists every broken file with its exact message", async () => {
    const run = await svc(["config", "validate", "--dir", join(FIXTURES, "invalid/five-broken-pipelines")], {
      HOOK_TOKEN: "t",
    });
    expect(run.code).toBe(1);
    for (const file of ["a-output", "b-manual", "c-retain", "d-env", "e-version"]) {
      expect(run.stdout).toContain(`pipelines/${file}.yaml (1 error)`);
    }
    expect(run.stdout).toContain(
      'pipelines/a-output.yaml: "output" is removed; migrate to "result" and "outputs"',
    );
    expect(run.stdout).toContain(
      'pipelines/b-manual.yaml: "trigger.manual" was removed - every pipeline is fireable by name, so delete the key',
    );
    expect(run.stdout).toContain(
      'pipelines/e-version.yaml: no single-skill version to inherit - declare an explicit "version" field',
    );
    expect(run.stdout).toContain("configuration invalid: 5 errors, 0 warnings in 5 files");
  });

  it("--json prints one document, valid on failure too, with every problem field", async () => {
    const run = await svc(["config", "validate", "--json", "--dir", join(FIXTURES, "invalid/env-reserved")], {
      HOOK_TOKEN: "t",
    });
    expect(run.code).toBe(1);
    const doc = JSON.parse(run.stdout);
    expect(doc.ok).toBe(false);
    expect(doc.problems).toEqual([
      {
        file: "pipelines/main.yaml",
        line: 6,
        column: 3,
        path: "env.SVC_TOKEN",
        code: "env_reserved",
        severity: "error",
        message:
          'pipelines/main.yaml: env "SVC_TOKEN" is reserved - names starting SVC_ belong to svc; rename the variable',
      },
    ]);
  });

  it("has --help with a description and examples", async () => {
    const run = await svc(["config", "validate", "--help"]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("EXAMPLES");
    expect(run.stdout).toContain("--dir");
    expect(run.stdout).toContain("--json");
  });
});

describe("svc doctor --json", () => {
  it("parses as JSON when the config dir is missing", async () => {
    const run = await svc(["doctor", "--json"], { SVC_CONFIG_DIR: "/nonexistent/svc-doctor" });
    expect(run.code).toBe(1);
    const doc = JSON.parse(run.stdout);
    expect(doc.ok).toBe(false);
    expect(doc.problems.map((problem: { code: string }) => problem.code)).toEqual(["config_dir_missing"]);
    expect(doc.checks.find((check: { name: string }) => check.name === "config-dir").status).toBe("error");
  });

  it("lists configuration errors and the missing instance key", async () => {
    const run = await svc(["doctor", "--json", "--dir", join(FIXTURES, "reference")], {});
    expect(run.code).toBe(1);
    const doc = JSON.parse(run.stdout);
    const codes = doc.problems.map((problem: { code: string }) => problem.code);
    expect(codes.filter((code: string) => code === "env_unset")).toHaveLength(6);
    expect(codes).toContain("instance_key_missing");
  });

  it("checks a reachable database and reports an unreachable one without its password", async () => {
    const adminUrl = inject("adminDatabaseUrl");
    const good = await svc(["doctor", "--json", "--dir", join(FIXTURES, "reference")], {
      ...REFERENCE_ENV,
      SVC_DATABASE_URL: adminUrl,
      SVC_INSTANCE_KEY_FILE: join(ROOT, "package.json"),
    });
    const goodDoc = JSON.parse(good.stdout);
    expect(goodDoc.checks.find((check: { name: string }) => check.name === "database").status).toBe("ok");
    expect(goodDoc).toMatchObject({ ok: true, problems: [] });
    expect(good.code).toBe(0);

    const bad = await svc(["doctor", "--json", "--dir", join(FIXTURES, "reference")], {
      ...REFERENCE_ENV,
      SVC_DATABASE_URL: "postgres://svc:hunter2-secret@127.0.0.1:1/svc",
      SVC_INSTANCE_KEY_FILE: join(ROOT, "package.json"),
    });
    expect(bad.code).toBe(1);
    expect(bad.stdout).not.toContain("hunter2-secret");
    const badDoc = JSON.parse(bad.stdout);
    expect(badDoc.problems.map((problem: { code: string }) => problem.code)).toEqual([
      "database_unreachable",
    ]);
  });
});
