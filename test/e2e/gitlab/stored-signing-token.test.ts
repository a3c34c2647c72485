import { createHmac, randomBytes, randomUUID } from "node:crypto";
import { readFile, rm } from "node:fs/promises";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import {
  childEnv,
  configDir,
  daemonYaml,
  freePort,
  ROOT,
  runSvc,
  startIngressProcess,
} from "../ingress/processes.ts";

const TOKEN = "e2e-gitlab-stored-token-77c1";
const KEY = randomBytes(32);
const SIGNING = `whsec_${KEY.toString("base64")}`;

describe("a gitlab source's tokens stored with svc setup webhook", () => {
  let database: TestDatabase;
  let dir: string | undefined;
  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
  });
  afterAll(async () => {
    await database?.drop();
    if (dir) await rm(dirname(dir), { recursive: true, force: true });
  });

  it("names the --signing command while the signing token is not stored, then verifies with it", async () => {
    dir = await configDir({
      "daemon.yaml": daemonYaml(`    gitlab:
      verify: gitlab
      secret_ref: webhook/gitlab
      signing_secret_ref: webhook/gitlab/signing-secret`),
    });
    const env = childEnv({
      SVC_CONFIG_DIR: dir,
      SVC_DATABASE_URL: database.url,
      SVC_PORT: String(await freePort()),
      GL_TOKEN: TOKEN,
      GL_SIGNING: SIGNING,
      NOT_SIGNING: "a-plain-secret",
    });
    expect((await runSvc(["setup", "instance-key"], env)).code).toBe(0);
    const token = await runSvc(["setup", "webhook", "gitlab", "--secret-env", "GL_TOKEN"], env);
    expect(token.code).toBe(0);

    const missing = await runSvc(["ingress"], env);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("refers to the stored secret webhook/gitlab/signing-secret");
    expect(missing.stderr).toContain("svc setup webhook gitlab --signing --secret-env <ENV_NAME>");

    const refused = await runSvc(
      ["setup", "webhook", "gitlab", "--signing", "--secret-env", "NOT_SIGNING"],
      env,
    );
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("NOT_SIGNING is not GitLab's signing token");
    expect(refused.stderr).not.toContain("a-plain-secret");

    const stored = await runSvc(
      ["setup", "webhook", "gitlab", "--signing", "--secret-env", "GL_SIGNING"],
      env,
    );
    expect(stored.code).toBe(0);
    expect(stored.stdout).toContain(
      'set "signing_secret_ref: webhook/gitlab/signing-secret" on webhooks.sources.gitlab',
    );
    expect(stored.stdout + stored.stderr).not.toContain(SIGNING);

    const ingress = await startIngressProcess(env);
    try {
      const body = await readFile(join(ROOT, "ingress/webhooks/gitlab/fixtures/push.json"), "utf8");
      const id = randomUUID();
      const timestamp = String(Math.floor(Date.now() / 1000));
      const signature = createHmac("sha256", KEY).update(`${id}.${timestamp}.${body}`).digest("base64");
      const send = (signatureHeader: string) =>
        fetch(`${ingress.url}/webhooks/gitlab`, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            "x-gitlab-token": TOKEN,
            "webhook-id": id,
            "webhook-timestamp": timestamp,
            "webhook-signature": signatureHeader,
          },
          body,
        });
      expect((await send(`v1,${randomBytes(32).toString("base64")}`)).status).toBe(401);
      expect((await send(`v1,${signature}`)).status).toBe(202);
    } finally {
      ingress.child.kill("SIGTERM");
      await ingress.exited;
    }
  });
});
