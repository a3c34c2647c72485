import { rm } from "node:fs/promises";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { freePort } from "../../support/free-port.ts";
import { svc } from "../cli/support.ts";
import { startIngress, startRole, writeConfigDir } from "../worker/processes.ts";

/**
 * A sandbox on the host's network (`network: host`) shares the host's network namespace: its
 * requests reach the ingress from 127.0.0.1 without a forwarding header, exactly as the svc CLI's
 * do, so the loopback rule would give a sandboxed run `*` without a token: fire the unsandboxed
 * `deploy` pipeline, run host tools, trust notes. The test sends what such a container sends, from
 * the host's loopback (a container on the host's network has no other), to the real ingress the
 * configuration starts; a daemon that refuses the configuration is never there to receive it.
 */

const DAEMON = `targets:
  local:
    runtime: command
    command: ["/bin/true"]
    timeout: 30s
ask:
  targets: [local]
`;
const PERSONA = "---\nname: helper\ndescription: Helps.\n---\nYou help.\n";
const BOXED = `version: 1.0.0
agent: helper
targets: [local]
instructions: review what a stranger sent
sandbox:
  network: host
`;
// unsandboxed, with the worker's own credentials and network: what the sandbox must not start
const DEPLOY = `version: 1.0.0
agent: helper
targets: [local]
instructions: deploy
`;

interface Attempt {
  /** the ingress's exit code when it refused to start */
  exitCode?: number | null;
  /** what the sandbox's request to fire `deploy` was answered, had the ingress started */
  attack?: number;
  output: string;
}

/**
 * Starts the real ingress on `dir`. Should it listen, sends what a process on the host's network
 * sends to fire `deploy`: no token, from 127.0.0.1, naming the daemon by its loopback address.
 */
async function startAndAttack(dir: string, databaseUrl: string): Promise<Attempt> {
  const port = await freePort();
  const role = startRole("ingress", {
    SVC_CONFIG_DIR: dir,
    SVC_DATABASE_URL: databaseUrl,
    SVC_HOST: "127.0.0.1",
    SVC_PORT: String(port),
  });
  try {
    const listening = await role
      .waitForLog((line) => line.event === "ingress.listening", "ingress.listening")
      .then(
        () => true,
        () => false,
      );
    if (!listening) return { exitCode: await role.exited, output: role.output.join("\n") };
    const fire = await fetch(`http://127.0.0.1:${port}/pipelines/deploy/fire`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: '{"args":{}}',
    });
    return { attack: fire.status, output: role.output.join("\n") };
  } finally {
    await role.stop();
  }
}

async function firedDeploys(pool: pg.Pool): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM svc.triggers WHERE source = 'deploy'",
  );
  return rows[0]?.n ?? 0;
}

describe("a sandbox on the host's network never gets the loopback `*` (real ingress and CLI)", () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  const dirs: string[] = [];

  const configDir = async (daemon: string, boxed: string) => {
    const dir = await writeConfigDir({
      "daemon.yaml": daemon,
      "agents/helper/PERSONA.md": PERSONA,
      "pipelines/boxed.yaml": boxed,
      "pipelines/deploy.yaml": DEPLOY,
    });
    dirs.push(dir);
    return dir;
  };

  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    pool = new pg.Pool({ connectionString: database.url, max: 1 });
    // the schema, so that a fire the daemon should not have taken can be counted
    const started = await startIngress({
      SVC_CONFIG_DIR: await configDir(DAEMON, DEPLOY),
      SVC_DATABASE_URL: database.url,
    });
    await started.role.stop();
  });

  afterAll(async () => {
    await pool?.end();
    await database?.drop();
    await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
  });

  it("a pipeline's sandbox.network: host with the loopback rule on: the daemon refuses to start, so nothing fires deploy", async () => {
    const dir = await configDir(DAEMON, BOXED);
    const attempt = await startAndAttack(dir, database.url);
    expect(attempt.attack, "the sandbox's request was served").toBeUndefined();
    expect(attempt.exitCode).not.toBe(0);
    expect(attempt.output).toContain('pipelines/boxed.yaml: "sandbox.network: host"');
    expect(attempt.output).toContain("server.loopback_star: false");
    expect(attempt.output).toContain("sandbox.network: none");
    expect(await firedDeploys(pool)).toBe(0);

    const validate = await svc(["config", "validate", "--dir", dir], { HOME: dir });
    expect(validate.code).toBe(1);
    expect(validate.stdout + validate.stderr).toContain("sandbox.network");
  });

  it("sandboxes.network: host in daemon.yaml: refused likewise, naming daemon.yaml", async () => {
    const dir = await configDir(
      `${DAEMON}sandboxes:\n  network: host\n`,
      DEPLOY.replace("deploy\n", "review\nsandbox: {}\n"),
    );
    const attempt = await startAndAttack(dir, database.url);
    expect(attempt.attack, "the sandbox's request was served").toBeUndefined();
    expect(attempt.output).toContain('daemon.yaml: "sandboxes.network: host"');
    expect(attempt.output).toContain("server.loopback_star: false");
    expect(await firedDeploys(pool)).toBe(0);
  });

  it("with server.loopback_star: false the host network is allowed, and the sandbox's request without a token is refused", async () => {
    const dir = await configDir(`server:\n  loopback_star: false\n${DAEMON}`, BOXED);
    const before = await firedDeploys(pool);
    const attempt = await startAndAttack(dir, database.url);
    expect(attempt.exitCode).toBeUndefined();
    expect(attempt.attack).toBe(401);
    expect(await firedDeploys(pool)).toBe(before);
  });
});
