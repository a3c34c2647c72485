import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sign } from "@octokit/webhooks-methods";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import {
  childEnv,
  configDir,
  daemonYaml,
  freePort,
  RELEASER_PERSONA,
  ROOT,
  runSvc,
  startIngressProcess,
} from "./processes.ts";

const GITHUB_SECRET = "e2e-github-secret-5d1f";
const DEPLOY_TOKEN = "e2e-deploy-token-91ab";

describe("svc ingress as a real process", () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
  });
  afterAll(async () => {
    await database?.drop();
  });

  it("stores a secret with svc setup, verifies with it, ignores SIGHUP and drains on SIGTERM", async () => {
    const dir = await configDir({
      "daemon.yaml": daemonYaml(`    github:
      verify: codehost
      secret_ref: webhook/github
    deploy:
      verify: bearer
      secret: \${DEPLOY_TOKEN}`),
    });
    const port = await freePort();
    const env = childEnv({
      SVC_CONFIG_DIR: dir,
      SVC_DATABASE_URL: database.url,
      SVC_PORT: String(port),
      DEPLOY_TOKEN,
      GH_SECRET: GITHUB_SECRET,
    });
    const keyPath = join(dir, "instance.key");

    // stored secret in use, no key file yet: start-up fails and names the file and the fix
    const noKey = await runSvc(["ingress"], env);
    expect(noKey.code).toBe(1);
    expect(noKey.stderr).toContain(`the instance key file ${keyPath} does not exist`);
    expect(noKey.stderr).toContain("webhooks.sources.github");

    const setupWithoutKey = await runSvc(["setup", "webhook", "github", "--secret-env", "GH_SECRET"], env);
    expect(setupWithoutKey.code).toBe(1);
    expect(setupWithoutKey.stderr).toContain("svc setup instance-key");

    const created = await runSvc(["setup", "instance-key"], env);
    expect(created.code).toBe(0);
    expect((await stat(keyPath)).mode & 0o777).toBe(0o600);
    const key = await readFile(keyPath, "utf8");
    const again = await runSvc(["setup", "instance-key"], env);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("already exists");
    expect(await readFile(keyPath, "utf8")).toBe(key);

    // the key exists but the secret is not stored yet
    const noSecret = await runSvc(["ingress"], env);
    expect(noSecret.code).toBe(1);
    expect(noSecret.stderr).toContain("svc setup webhook github --secret-env <ENV_NAME>");

    const stored = await runSvc(["setup", "webhook", "github", "--secret-env", "GH_SECRET"], env);
    expect(stored.code).toBe(0);
    expect(stored.stdout).toContain('set "secret_ref: webhook/github" on webhooks.sources.github');
    expect(stored.stdout).toContain("restart the daemon");
    expect(stored.stdout + stored.stderr).not.toContain(GITHUB_SECRET);
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    const { rows } = await client.query("SELECT name, ciphertext FROM svc.secrets");
    await client.end();
    expect(rows.map((row) => row.name)).toEqual(["webhook/github"]);
    expect((rows[0].ciphertext as Buffer).includes(Buffer.from(GITHUB_SECRET))).toBe(false);

    const ingress = await startIngressProcess(env);
    try {
      const body = await readFile(
        join(ROOT, "ingress/webhooks/codehost/fixtures/pull_request/opened.payload.json"),
        "utf8",
      );
      const accepted = await fetch(`${ingress.url}/events`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-github-event": "pull_request",
          "x-github-delivery": "e2e-1",
          "x-hub-signature-256": await sign(GITHUB_SECRET, body),
        },
        body,
      });
      expect(accepted.status).toBe(202);
      const wrong = await fetch(`${ingress.url}/events`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-github-event": "pull_request",
          "x-hub-signature-256": await sign("other", body),
        },
        body,
      });
      expect(wrong.status).toBe(401);

      ingress.child.kill("SIGHUP");
      await ingress.waitForLine((line) => line.event === "signal.ignored");
      const afterHup = await fetch(`${ingress.url}/webhooks/deploy`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${DEPLOY_TOKEN}` },
        body: "{}",
      });
      expect(afterHup.status).toBe(202);

      // a request whose headers the server has read (it answered 100 Continue) is in flight when SIGTERM lands
      const inFlight = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const payload = JSON.stringify({ inFlight: true });
        const req = request(`${ingress.url}/webhooks/deploy`, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            authorization: `Bearer ${DEPLOY_TOKEN}`,
            "content-length": Buffer.byteLength(payload),
            expect: "100-continue",
          },
        });
        req.on("continue", async () => {
          ingress.child.kill("SIGTERM");
          await ingress.waitForLine((line) => line.event === "ingress.stopping");
          // the listening socket is closed now: a new connection is refused
          await expect(fetch(`${ingress.url}/health`)).rejects.toThrow();
          req.end(payload);
        });
        req.on("response", (res) => {
          let text = "";
          res.on("data", (chunk) => (text += chunk));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
        });
        req.on("error", reject);
      });
      expect(inFlight.status).toBe(202);
      expect(JSON.parse(inFlight.body).trigger).toMatch(/^trg_/);
      const finished = await ingress.exited;
      expect(finished.code).toBe(0);
      const all = finished.stdout + finished.stderr;
      for (const secret of [GITHUB_SECRET, DEPLOY_TOKEN, key.trim(), '"number": 2'])
        expect(all).not.toContain(secret);
      expect(
        ingress
          .lines()
          .filter((line) => line.event === "http.request")
          .map((line) => line.status),
      ).toEqual([202, 401, 202, 202]);
    } finally {
      ingress.child.kill("SIGKILL");
    }
  });

  const refusals: {
    name: string;
    files: Record<string, string>;
    env?: Record<string, string>;
    expected: string[];
  }[] = [
    {
      name: "a trigger pointed at a source of a different verify kind",
      files: {
        "daemon.yaml": daemonYaml("    github:\n      verify: codehost\n      secret: s1"),
        "agents/releaser/PERSONA.md": RELEASER_PERSONA,
        "pipelines/notes.yaml":
          "version: 1.0.0\nagent: releaser\ntargets: [local]\ntrigger:\n  webhook: [github]\ninstructions: Write notes.\n",
      },
      expected: ["verify_kind_mismatch", "pipelines/notes.yaml"],
    },
    {
      name: "a webhook trigger without a source while bound off loopback",
      files: {
        "daemon.yaml": daemonYaml("    other:\n      verify: bearer\n      secret: s2"),
        "agents/releaser/PERSONA.md": RELEASER_PERSONA,
        "pipelines/notes.yaml":
          "version: 1.0.0\nagent: releaser\ntargets: [local]\ntrigger:\n  webhook: [deploy]\ninstructions: Write notes.\n",
      },
      env: { SVC_HOST: "0.0.0.0" },
      expected: ["webhook_source_missing", "the daemon refuses to start"],
    },
    {
      name: "a missing ask block",
      files: {
        "daemon.yaml": daemonYaml("    other:\n      verify: bearer\n      secret: s3").replace(
          "ask:\n  targets: [local]\n",
          "",
        ),
      },
      expected: ["ask"],
    },
    {
      name: "a log block that is not a valid one",
      files: {
        "daemon.yaml": daemonYaml(
          "    other:\n      verify: bearer\n      secret: s5",
          "log:\n  file: svc.log\n",
        ),
      },
      expected: [
        'daemon.yaml: "log.file" must be an absolute file path such as /var/log/svc/svc.log (each process writes its own file, e.g. svc.ingress.log) (got "svc.log")',
      ],
    },
    {
      name: "a log file in a directory that does not exist",
      files: {
        "daemon.yaml": daemonYaml(
          "    other:\n      verify: bearer\n      secret: s6",
          "log:\n  file: /nonexistent/svc-e2e/svc.log\n",
        ),
      },
      expected: [
        'daemon.yaml: "log.file": the directory /nonexistent/svc-e2e does not exist - create it and let the svc user write there, or remove the "log" block',
      ],
    },
    {
      name: "any configuration error",
      files: { "daemon.yaml": daemonYaml("    other:\n      verify: sometimes\n      secret: s4") },
      expected: ["webhooks.sources.other.verify"],
    },
  ];
  for (const refusal of refusals) {
    it(`refuses to start on ${refusal.name}, printing the problems as config validate does`, async () => {
      const dir = await configDir(refusal.files);
      const port = await freePort();
      const result = await runSvc(
        ["ingress"],
        childEnv({
          SVC_CONFIG_DIR: dir,
          SVC_DATABASE_URL: database.url,
          SVC_PORT: String(port),
          ...refusal.env,
        }),
      );
      expect(result.code).not.toBe(0);
      expect(result.stderr).toContain("svc ingress: refusing to start");
      expect(result.stderr).toMatch(/daemon\.yaml|pipelines\//);
      for (const text of refusal.expected) expect(result.stderr).toContain(text);
      // nothing listened: the port is still free
      await expect(fetch(`http://127.0.0.1:${port}/health`)).rejects.toThrow();
    });
  }

  it("with a log block, writes its lines into <file> with its role, as well as to stdout", async () => {
    const logs = await mkdtemp(join(tmpdir(), "svc-e2e-logs-"));
    const dir = await configDir({
      "daemon.yaml": daemonYaml(
        `    deploy:\n      verify: bearer\n      secret: \${DEPLOY_TOKEN}`,
        `log:\n  file: ${join(logs, "svc.log")}\n  max_size: 1MiB\n  max_files: 2\n`,
      ),
    });
    const env = childEnv({
      SVC_CONFIG_DIR: dir,
      SVC_DATABASE_URL: database.url,
      SVC_PORT: String(await freePort()),
      DEPLOY_TOKEN,
    });
    const ingress = await startIngressProcess(env);
    try {
      const refused = await fetch(`${ingress.url}/webhooks/deploy`, {
        method: "POST",
        headers: { authorization: `Bearer wrong-${DEPLOY_TOKEN}`, "content-type": "application/json" },
        body: "{}",
      });
      expect(refused.status).toBe(401);
      ingress.child.kill("SIGTERM");
      expect((await ingress.exited).code).toBe(0);
      const lines = (await readFile(join(logs, "svc.ingress.log"), "utf8"))
        .split("\n")
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      const events = lines.map((line) => line.event);
      expect(events).toContain("ingress.listening");
      expect(lines.find((line) => line.event === "http.request")).toMatchObject({
        status: 401,
        role: "ingress",
      });
      expect(events).toContain("ingress.stopped");
      expect(JSON.stringify(lines)).not.toContain(DEPLOY_TOKEN);
    } finally {
      ingress.child.kill("SIGKILL");
      await rm(logs, { recursive: true, force: true });
    }
  });

  it("fails to start, naming the cause, when stored secrets are in use and the database cannot be reached", async () => {
    const dir = await configDir({
      "daemon.yaml": daemonYaml("    github:\n      verify: codehost\n      secret_ref: webhook/github"),
    });
    const env = childEnv({ SVC_CONFIG_DIR: dir, SVC_PORT: String(await freePort()) });
    expect((await runSvc(["setup", "instance-key"], env)).code).toBe(0);
    const closedPort = await freePort();
    const result = await runSvc(["ingress"], {
      ...env,
      SVC_DATABASE_URL: `postgres://svc:wrong@127.0.0.1:${closedPort}/svc`,
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      `cannot prepare the database at postgres://svc:***@127.0.0.1:${closedPort}/svc`,
    );
    expect(result.stderr).toContain("stored secrets are in use");
    expect(result.stderr).not.toContain("wrong");
  });
});
