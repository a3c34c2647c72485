import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { listSecretNames, readSecrets } from "../../../db/secrets.ts";
import { readInstanceKey } from "../../../shared/secrets/instance-key.ts";
import { waitForTrigger } from "../../integration/worker/helpers.ts";
import { runSvc } from "../ingress/processes.ts";
import {
  APP_ID,
  type AppBed,
  PRINCIPAL_APP_ID,
  REPO,
  rsaKeyPair,
  SHORT_LIVED,
  startAppBed,
} from "./github-app-bed.ts";
import { PR_PAYLOAD } from "./pull-request.ts";

const commentsOf = (bed: AppBed, repo: string) =>
  bed.github.requests.filter(
    (request) =>
      request.method === "POST" && request.path === `/repos/${repo}/issues/${PR_PAYLOAD.number}/comments`,
  );

/**
 * svc as a GitHub App, with real ingress and worker processes and a loopback GitHub that knows
 * only the Apps' public keys: no long-lived token exists anywhere in the configuration.
 */
describe("a GitHub App identity", () => {
  let bed: AppBed;

  beforeAll(async () => {
    bed = await startAppBed(inject("adminDatabaseUrl"));
  });

  afterAll(async () => {
    await bed?.stop();
  });

  it("posts two comments with installation tokens after one token exchange, and reuses it on the next run", async () => {
    const first = await bed.deliver("opened");
    expect((await waitForTrigger(bed.pool, first)).status).toBe("completed");
    const second = await bed.deliver("opened");
    expect((await waitForTrigger(bed.pool, second)).status).toBe("completed");

    const posts = commentsOf(bed, REPO);
    expect(posts).toHaveLength(4);
    const exchanges = bed.github.exchanges.filter((entry) => entry.installationId === 77);
    expect(exchanges).toHaveLength(1);
    expect(exchanges[0]).toMatchObject({ appId: APP_ID, repositories: undefined });
    expect(new Set(posts.map((post) => post.authorization))).toEqual(
      new Set([`token ${exchanges[0]!.token}`]),
    );
    // the installation was looked up once, with an App JWT
    const lookups = bed.github.requests.filter((request) => request.path === `/repos/${REPO}/installation`);
    expect(lookups).toHaveLength(1);
    expect(lookups[0]!.authorization).toMatch(/^Bearer [\w-]+\.[\w-]+\.[\w-]+$/);
    const thread = bed.github.comments.get(`${REPO}#${PR_PAYLOAD.number}`) ?? [];
    expect(thread.map((comment) => comment.user.login)).toEqual(Array(4).fill("svc-app[bot]"));
  });

  it("renews a token near its expiry instead of using it", async () => {
    const id = await bed.deliver("opened", SHORT_LIVED);
    expect((await waitForTrigger(bed.pool, id)).status).toBe("completed");
    const exchanges = bed.github.exchanges.filter((entry) => entry.installationId === 78);
    // each of its tokens expires in four minutes, inside the five-minute margin: each use renews
    expect(exchanges).toHaveLength(2);
    const posts = commentsOf(bed, SHORT_LIVED);
    expect(posts.map((post) => post.authorization)).toEqual(exchanges.map((entry) => `token ${entry.token}`));
  });

  it("an App principal posts as itself, with its own installation's token", async () => {
    const before = commentsOf(bed, REPO).length;
    const id = await bed.deliver("edited");
    expect((await waitForTrigger(bed.pool, id)).status).toBe("completed");
    const exchanges = bed.github.exchanges.filter((entry) => entry.appId === PRINCIPAL_APP_ID);
    expect(exchanges).toHaveLength(1);
    expect(exchanges[0]!.installationId).toBe(91);
    const posts = commentsOf(bed, REPO).slice(before);
    expect(posts.map((post) => post.authorization)).toEqual(Array(2).fill(`token ${exchanges[0]!.token}`));
    const thread = bed.github.comments.get(`${REPO}#${PR_PAYLOAD.number}`) ?? [];
    expect(thread.slice(-2).map((comment) => comment.user.login)).toEqual([
      "svc-reviewer[bot]",
      "svc-reviewer[bot]",
    ]);
  });

  it("svc doctor signs in as each App and lists its installations; a wrong or broken key is reported precisely, never shown", async () => {
    const doctor = async (env: Record<string, string>) => {
      const run = await runSvc(["doctor", "--json", "--dir", bed.dir], {
        ...env,
        PATH: "/usr/bin:/bin",
        HOME: bed.dir,
      });
      const report = JSON.parse(run.stdout) as {
        checks: { name: string; status: string; detail: string }[];
        problems: { code: string; path: string; message: string }[];
      };
      for (const key of [...bed.keys, env.GITHUB_APP_PRIVATE_KEY!])
        expect(run.stdout + run.stderr).not.toContain(key.split("\n")[1]);
      return { report, check: (name: string) => report.checks.find((entry) => entry.name === name) };
    };

    const good = await doctor(bed.env);
    expect(good.check("codehost-app")).toEqual({
      name: "codehost-app",
      status: "ok",
      detail: `codehost.app: App svc-app (${APP_ID}), 2 installation(s): Codertocat (77), Codertocat (78); codehost.principals.reviewer.app: App svc-reviewer (${PRINCIPAL_APP_ID}), 1 installation(s): Codertocat (91)`,
    });

    // a well-formed key that is not the App's: GitHub refuses the JWT
    const wrong = await doctor({ ...bed.env, GITHUB_APP_PRIVATE_KEY: rsaKeyPair().privateKey });
    expect(wrong.check("codehost-app")?.status).toBe("error");
    expect(wrong.report.problems).toContainEqual(
      expect.objectContaining({
        code: "codehost_app_refused",
        path: "codehost.app",
        message: `daemon.yaml: "codehost.app": GitHub App ${APP_ID}: GET /app answered 401 (A JSON web token could not be decoded) - check codehost.app.id and that the private key belongs to this App`,
      }),
    );

    // a truncated PEM never gets as far as GitHub: the configuration names the key
    const broken = bed.env.GITHUB_APP_PRIVATE_KEY!.split("\n").slice(0, 4).join("\n");
    const cut = await doctor({ ...bed.env, GITHUB_APP_PRIVATE_KEY: broken });
    expect(cut.check("configuration")?.status).toBe("error");
    expect(cut.report.problems).toContainEqual(
      expect.objectContaining({
        path: "codehost.app.private_key",
        message: expect.stringContaining("is not an RSA private key in PEM form"),
      }),
    );
  });

  it("svc setup codehost-app stores a PEM key as codehost/app-private-key and refuses anything else, storing nothing", async () => {
    const env = { ...bed.env, PATH: "/usr/bin:/bin", HOME: bed.dir };
    expect((await runSvc(["setup", "instance-key"], env)).code).toBe(0);
    const junk = join(bed.out, "not-a-key.pem");
    await writeFile(junk, "-----BEGIN RSA PRIVATE KEY-----\nnot a key\n-----END RSA PRIVATE KEY-----\n");
    const refused = await runSvc(["setup", "codehost-app", "--key-file", junk], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      `${junk} is not an RSA private key in PEM form - generate one on the App's settings page (Private keys) and pass that .pem file; nothing was stored\n`,
    );
    expect((await listSecretNames(bed.pool)).map((entry) => entry.name)).not.toContain(
      "codehost/app-private-key",
    );

    const pem = join(bed.out, "app.pem");
    await writeFile(pem, bed.env.GITHUB_APP_PRIVATE_KEY!);
    const stored = await runSvc(["setup", "codehost-app", "--key-file", pem], env);
    expect(stored.code).toBe(0);
    expect(stored.stdout + stored.stderr).not.toContain(bed.env.GITHUB_APP_PRIVATE_KEY!.split("\n")[1]);
    const key = await readInstanceKey(join(bed.dir, "instance.key"));
    const secrets = await readSecrets(bed.pool, key, ["codehost/app-private-key"]);
    expect(secrets.get("codehost/app-private-key")).toBe(bed.env.GITHUB_APP_PRIVATE_KEY);
  });
});
