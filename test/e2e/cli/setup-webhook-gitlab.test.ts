// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} is the configuration substitution syntax
import { randomBytes } from "node:crypto";
import { rm } from "node:fs/promises";
import { dirname } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { childEnv, configDir, runSvc } from "../ingress/processes.ts";

const SECRET = "e2e-gitlab-form-secret-6f1d0c";
const STORED = "e2e-gitlab-form-stored-93ab77";
const SIGNING = `whsec_${randomBytes(32).toString("base64")}`;
const TRIGGERS = "tick Push events, Tag push events, Comments, Merge request events";

/**
 * `svc setup webhook <source>` for a `verify: gitlab` source prints GitLab's webhook form (issue
 * 53): the URL under server.public_url, which secret goes into Secret token and Signing token (named,
 * never printed), the triggers to tick and SSL verification; without --secret-env it stores nothing.
 */
describe("svc setup webhook: GitLab's webhook form", () => {
  const dirs: string[] = [];
  let database: TestDatabase | undefined;
  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
  });
  afterAll(async () => {
    await database?.drop();
    for (const dir of dirs) await rm(dirname(dir), { recursive: true, force: true });
  });

  const setup = async (daemon: string) => {
    const dir = await configDir({ "daemon.yaml": daemon });
    dirs.push(dir);
    return dir;
  };
  const noSecrets = (run: { stdout: string; stderr: string }) => {
    for (const secret of [SECRET, STORED, SIGNING, SIGNING.slice(6)])
      expect(run.stdout + run.stderr).not.toContain(secret);
  };

  it("names the environment variable of an inline secret and the URL under server.public_url, storing nothing", async () => {
    const dir = await setup(`server:
  public_url: https://svc.example.com/
webhooks:
  sources:
    gitlab:
      verify: gitlab
      secret: \${GL_SECRET}
`);
    // no database, no instance key: nothing is stored, so neither is needed
    const run = await runSvc(
      ["setup", "webhook", "gitlab", "--dir", dir],
      childEnv({ GL_SECRET: SECRET, SVC_DATABASE_URL: "postgres://nobody@127.0.0.1:1/none" }),
    );
    expect(run.code).toBe(0);
    noSecrets(run);
    expect(run.stdout.split("\n")).toEqual([
      "GitLab webhook form (the project's or group's Settings → Webhooks → Add new webhook):",
      "  URL               https://svc.example.com/webhooks/gitlab",
      "  Secret token      the value of the environment variable GL_SECRET (webhooks.sources.gitlab.secret) as the daemon's environment sets it",
      "  Signing token     leave it empty - webhooks.sources.gitlab checks no signing token (svc setup webhook gitlab --signing --secret-env <ENV_NAME> stores one)",
      `  Trigger           ${TRIGGERS} (Push events: all branches)`,
      "  SSL verification  tick Enable SSL verification",
      "Then Add webhook. Each delivery is listed under the webhook's Recent events: svc answers 202, or 401 when a token does not match.",
      "",
    ]);
  });

  it("names stored secrets without reading them, and the key to set when server.public_url is missing", async () => {
    const dir = await setup(`webhooks:
  sources:
    gl:
      verify: gitlab
      secret_ref: webhook/gl
      signing_secret_ref: webhook/gl/signing-secret
`);
    const run = await runSvc(["setup", "webhook", "gl", "--dir", dir], childEnv({}));
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("  URL               <server.public_url>/webhooks/gl\n");
    expect(run.stdout).toContain(
      "server.public_url is not set in daemon.yaml: use the https address GitLab reaches svc's ingress at",
    );
    expect(run.stdout).toContain(
      "  Secret token      the secret stored as webhook/gl (webhooks.sources.gl.secret_ref) - svc does not print stored secrets",
    );
    expect(run.stdout).toContain(
      "  Signing token     the secret stored as webhook/gl/signing-secret (webhooks.sources.gl.signing_secret_ref)",
    );
    expect(run.stdout).toContain(TRIGGERS);
  });

  it("a source of another kind still needs --secret-env", async () => {
    const dir = await setup(`webhooks:
  sources:
    github:
      verify: codehost
      secret: \${GH_SECRET}
`);
    const run = await runSvc(["setup", "webhook", "github", "--dir", dir], childEnv({ GH_SECRET: SECRET }));
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("--secret-env is required");
    expect(run.stdout).not.toContain("GitLab webhook form");
    noSecrets(run);
  });

  it("after storing a secret token or a signing token, names the variable just stored, never its value", async () => {
    const dir = await setup(`server:
  public_url: https://svc.example.com/hooks
webhooks:
  sources:
    gitlab:
      verify: gitlab
      secret_ref: webhook/gitlab
      signing_secret_ref: webhook/gitlab/signing-secret
`);
    const env = childEnv({
      SVC_CONFIG_DIR: dir,
      SVC_DATABASE_URL: database!.url,
      GL_TOKEN: STORED,
      GL_SIGNING: SIGNING,
    });
    expect((await runSvc(["setup", "instance-key"], env)).code).toBe(0);

    const token = await runSvc(["setup", "webhook", "gitlab", "--secret-env", "GL_TOKEN"], env);
    expect(token.code).toBe(0);
    noSecrets(token);
    expect(token.stdout).toContain('Next: set "secret_ref: webhook/gitlab" on webhooks.sources.gitlab');
    expect(token.stdout).toContain("  URL               https://svc.example.com/hooks/webhooks/gitlab\n");
    expect(token.stdout).toContain(
      "  Secret token      the value of GL_TOKEN you just stored as webhook/gitlab\n",
    );
    expect(token.stdout).toContain(
      "  Signing token     the secret stored as webhook/gitlab/signing-secret (webhooks.sources.gitlab.signing_secret_ref)",
    );

    const signing = await runSvc(
      ["setup", "webhook", "gitlab", "--signing", "--secret-env", "GL_SIGNING"],
      env,
    );
    expect(signing.code).toBe(0);
    noSecrets(signing);
    expect(signing.stdout).toContain(
      "  Secret token      the secret stored as webhook/gitlab (webhooks.sources.gitlab.secret_ref)",
    );
    expect(signing.stdout).toContain(
      "  Signing token     the value of GL_SIGNING you just stored as webhook/gitlab/signing-secret (whsec_...)\n",
    );
    expect(signing.stdout).toContain("  SSL verification  tick Enable SSL verification\n");
  });

  it("--help shows the GitLab examples", async () => {
    const run = await runSvc(["setup", "webhook", "--help"], childEnv({}));
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("Print GitLab's webhook form for a verify: gitlab source, storing nothing:");
    expect(run.stdout).toContain("$ svc setup webhook gitlab");
    // help wraps its text: compare it with the line breaks taken out
    const text = run.stdout.replace(/\s+/g, " ");
    expect(text).toContain(
      "the triggers to tick (Push events, Tag push events, Comments, Merge request events)",
    );
    expect(text).toContain("Without --secret-env it only prints that form, storing nothing.");
  });
});
