import { mkdir, mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type pg from "pg";
import type { PgBoss } from "pg-boss";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ensureQueue, startBoss } from "../../../db/boss.ts";
import { createPool } from "../../../db/connect.ts";
import { laneQueue } from "../../../shared/queues.ts";
import { startReverseProxy } from "../../drills/support/proxy.ts";
import { seedLineage } from "../../integration/api/support.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { daemonYaml, freePort, PERSONA_MD, PIPELINE_YAML, type Run, svc } from "./support.ts";

/**
 * The operator CLI against a daemon it starts itself: `svc daemon start` runs the real ingress and
 * worker as background processes over a test database; every command then goes over HTTP.
 */
let db: TestDatabase;
let work: string;
let configDir: string;
let env: Record<string, string>;
let pool: pg.Pool;
let token: string;

const READER_TOKEN = "reader-secret-e2e-0123456789";
const LEGACY_TOKEN = "legacy-secret-e2e-0123456789";

function withDaemon(extra: Record<string, string> = {}): Record<string, string> {
  return { ...env, ...extra };
}

function expectOk(run: Run): Run {
  expect(run.code, `stdout:\n${run.stdout}\nstderr:\n${run.stderr}`).toBe(0);
  return run;
}

beforeAll(async () => {
  db = await createTestDatabase(inject("adminDatabaseUrl"));
  work = await mkdtemp(join(tmpdir(), "svc-cli-e2e-"));
  configDir = join(work, ".svc");
  await mkdir(join(configDir, "pipelines"), { recursive: true });
  await writeFile(join(configDir, "daemon.yaml"), daemonYaml());
  await writeFile(join(configDir, "pipelines", "hello.yaml"), PIPELINE_YAML);
  await mkdir(join(configDir, "agents", "helper"), { recursive: true });
  await writeFile(join(configDir, "agents", "helper", "PERSONA.md"), PERSONA_MD);
  env = {
    HOME: work,
    XDG_CONFIG_HOME: join(work, "xdg"),
    SVC_CONFIG_DIR: configDir,
    SVC_DATABASE_URL: db.url,
    SVC_PORT: String(await freePort()),
    HELLO_TOKEN: "hello-token-e2e",
    READER_TOKEN,
    LEGACY_TOKEN,
    // must be ignored: the environment fallback was removed
    SVC_MANAGEMENT_TOKEN: READER_TOKEN,
  };
  const started = expectOk(await svc(["daemon", "start", "--json"], env));
  const url = (JSON.parse(started.stdout) as { url: string }).url;
  expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  env.SVC_DAEMON_URL = url;
  pool = createPool(db.url, { max: 2 });
}, 240_000);

afterAll(async () => {
  if (env) await svc(["daemon", "stop"], env);
  await pool?.end();
  await db?.drop();
  if (work) await rm(work, { recursive: true, force: true });
}, 120_000);

describe("svc daemon", () => {
  it("status reports the daemon reachable and both background processes", async () => {
    const run = expectOk(await svc(["daemon", "status", "--json"], withDaemon()));
    const status = JSON.parse(run.stdout) as {
      reachable: boolean;
      processes: { role: string; pid: number | null }[];
    };
    expect(status.reachable).toBe(true);
    expect(status.processes.map((entry) => entry.role)).toEqual(["ingress", "worker"]);
    for (const entry of status.processes) expect(entry.pid).toBeGreaterThan(0);
    await stat(join(configDir, "run", "ingress.pid"));
    await stat(join(configDir, "run", "worker.pid"));
  });

  it("status exits 1 when nothing answers at SVC_DAEMON_URL", async () => {
    const run = await svc(["daemon", "status"], withDaemon({ SVC_DAEMON_URL: "http://127.0.0.1:1" }));
    expect(run.code).toBe(1);
    expect(run.stdout).toContain("unreachable");
  });

  it("reload is refused with the replacement", async () => {
    const run = await svc(["daemon", "reload"], withDaemon());
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("svc config validate && svc daemon restart");
  });
});

describe("credentials", () => {
  it("without stored credentials, a command on the daemon's host acts as the loopback client with *", async () => {
    // SVC_MANAGEMENT_TOKEN (the reader token, no `admin`) is not read: queue status needs `admin`
    expectOk(await svc(["queue", "status"], withDaemon()));
    expectOk(await svc(["schedule", "list"], withDaemon()));
  });

  it("without stored credentials, a command through a reverse proxy is refused", async () => {
    const proxy = await startReverseProxy([env.SVC_DAEMON_URL!]);
    try {
      const run = await svc(["trigger", "list"], withDaemon({ SVC_DAEMON_URL: proxy.url }));
      expect(run.code).toBe(1);
      expect(run.stderr).toContain("svc auth setup");
    } finally {
      await proxy.close();
    }
  });

  it("token issue prints a `*` token once and stores only its hash", async () => {
    const run = expectOk(await svc(["token", "issue", "--name", "e2e", "--json"], withDaemon()));
    const issued = JSON.parse(run.stdout) as { id: string; scopes: string[]; token: string };
    expect(issued.scopes).toEqual(["*"]);
    token = issued.token;
    const { rows } = await pool.query("SELECT name, scopes, token_hash FROM svc.api_tokens WHERE id = $1", [
      issued.id,
    ]);
    expect(rows[0].scopes).toEqual(["*"]);
    expect(rows[0].token_hash.toString("utf8")).not.toContain(token);
    const plain = expectOk(await svc(["token", "issue"], withDaemon()));
    expect(plain.stdout.trim()).toMatch(/^svct_[A-Za-z0-9_-]{40,}$/);
    expect(plain.stderr).toContain("shown only this once");
  });

  it("auth setup refuses a token the daemon does not accept and saves nothing", async () => {
    const run = await svc(["auth", "setup"], withDaemon(), "not-a-token\n");
    expect(run.code).toBe(1);
    expect(run.stderr).not.toContain("not-a-token");
    await expect(stat(join(env.XDG_CONFIG_HOME!, "svc", "credentials.json"))).rejects.toThrow();
  });

  it("auth setup checks the token and saves it with mode 0600", async () => {
    const run = expectOk(await svc(["auth", "setup", "--json"], withDaemon(), `${token}\n`));
    const saved = JSON.parse(run.stdout) as { owner: string; scopes: string[]; saved: string };
    expect(saved.scopes).toEqual(["*"]);
    expect(saved.owner).toMatch(/^tok_/);
    expect(run.stdout).not.toContain(token);
    const mode = (await stat(saved.saved)).mode & 0o777;
    expect(mode).toBe(0o600);
  });
});

describe("with stored credentials", () => {
  let ok: Awaited<ReturnType<typeof seedLineage>>;
  let failed: Awaited<ReturnType<typeof seedLineage>>;
  let boss: PgBoss;

  beforeAll(async () => {
    ok = await seedLineage(pool, {
      ids: { trigger: "trg_ambigu2aaaaaaaaaaaaaa", invocation: "inv_uniq3aaaaaaaaaaaaaaaa" },
    });
    failed = await seedLineage(pool, { failed: true, ids: { trigger: "trg_ambigu2bbbbbbbbbbbbbb" } });
    // one failed job on a lane no worker serves, for the queue's failed line
    boss = await startBoss({ url: db.url, max: 1, supervise: false });
    const lane = laneQueue("ghost");
    await ensureQueue(boss, lane, { retryLimit: 0 });
    await boss.send(lane, { invocationId: failed.invocation }, { retryLimit: 0 });
    const [job] = await boss.fetch(lane);
    await boss.fail(lane, job!.id, { message: "boom" });
  });

  afterAll(async () => {
    await boss?.stop({ graceful: false, close: true });
  });

  it("trace: an ambiguous prefix lists the candidates and exits 1", async () => {
    const run = await svc(["trace", "trg_ambigu2"], withDaemon());
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(ok.trigger);
    expect(run.stderr).toContain(failed.trigger);
  });

  it("trace: a prefix shorter than six characters is refused before asking the daemon", async () => {
    const run = await svc(["trace", "trg_ab"], withDaemon());
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("at least six");
  });

  it("trace: a unique prefix resolves, says so on stderr, and prints the tree", async () => {
    const run = expectOk(await svc(["trace", "inv_uniq3a"], withDaemon()));
    expect(run.stderr).toContain(`resolved inv_uniq3a -> ${ok.invocation}`);
    expect(run.stdout).toContain(`trigger ${ok.trigger}`);
    expect(run.stdout).toContain(`workload ${ok.workload}`);
    expect(run.stdout).toContain(`invocation ${ok.invocation}`);
    expect(run.stdout).toContain(`task ${ok.task}`);
    expect(run.stdout).toContain("artifact transcript");
  });

  it("trace --json: a unique prefix still says on stderr what it resolved to, stdout stays one document", async () => {
    const run = expectOk(await svc(["trace", "inv_uniq3a", "--json"], withDaemon()));
    expect(run.stderr).toBe(`resolved inv_uniq3a -> ${ok.invocation}\n`);
    expect((JSON.parse(run.stdout) as { invocations: { id: string }[] }).invocations[0]!.id).toBe(
      ok.invocation,
    );
  });

  it("trace --json: an ambiguous prefix lists the candidates on stderr", async () => {
    const run = await svc(["trace", "trg_ambigu2", "--json"], withDaemon());
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("trg_ambigu2 is ambiguous; candidates:\n");
    expect(run.stderr).toContain(`  ${ok.trigger}\n`);
  });

  it("trace: a full id prints no resolved line", async () => {
    const run = expectOk(await svc(["trace", ok.trigger], withDaemon()));
    expect(run.stderr).not.toContain("resolved");
  });

  it("trace --json has the contract's top-level keys and per-invocation diagnostic fields", async () => {
    const run = expectOk(await svc(["trace", failed.trigger, "--json"], withDaemon()));
    const json = JSON.parse(run.stdout) as Record<string, unknown> & {
      invocations: Record<string, unknown>[];
      artifacts: Record<string, { manifest: { name: string }[]; rendered: Record<string, string> }>;
    };
    expect(Object.keys(json).sort()).toEqual(["artifacts", "invocations", "tasks", "trigger", "workload"]);
    expect(json.invocations[0]).toMatchObject({ id: failed.invocation, diagnostic_code: "agent_timeout" });
    expect(json.invocations[0]!.diagnostic_message).toBe("the agent ran past 20m");
    expect(json.invocations[0]).not.toHaveProperty("failureReason");
    expect(json.artifacts[failed.invocation]!.manifest.map((entry) => entry.name)).toEqual(["transcript"]);
    expect(json.artifacts[failed.invocation]!.rendered.transcript).toBe("hello agent");
  });

  it("trigger list filters by status and code", async () => {
    const run = expectOk(
      await svc(["trigger", "list", "--status", "error", "--code", "agent_timeout", "--json"], withDaemon()),
    );
    const json = JSON.parse(run.stdout) as { triggers: { id: string; payload?: unknown }[] };
    expect(json.triggers.map((row) => row.id)).toEqual([failed.trigger]);
    expect(json.triggers[0]).not.toHaveProperty("payload");
    const text = expectOk(await svc(["trigger", "list", "--status", "completed"], withDaemon()));
    expect(text.stdout).toContain(ok.trigger);
    expect(text.stdout).not.toContain(failed.trigger);
  });

  it("trigger list --status timeout is refused: the status no longer exists", async () => {
    const run = await svc(["trigger", "list", "--status", "timeout"], withDaemon());
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain('"timeout" no longer exists');
  });

  it("trigger stats --status error --by code breaks errors down by code", async () => {
    const run = expectOk(
      await svc(["trigger", "stats", "--status", "error", "--by", "code", "--json"], withDaemon()),
    );
    const json = JSON.parse(run.stdout) as { total: number; groups: { code: string; count: number }[] };
    expect(json.groups).toEqual([{ code: "agent_timeout", count: 1 }]);
    const text = expectOk(await svc(["trigger", "stats", "--status", "error", "--by", "code"], withDaemon()));
    expect(text.stdout).toMatch(/1\s+agent_timeout/);
  });

  it("trigger inspect --json emits the trigger with payload and diagnostic", async () => {
    const run = expectOk(await svc(["trigger", "inspect", failed.trigger, "--json"], withDaemon()));
    const json = JSON.parse(run.stdout) as { trigger: { payload: unknown; diagnostic: { code: string } } };
    expect(json.trigger.payload).toEqual({ ref: "main" });
    expect(json.trigger.diagnostic.code).toBe("agent_timeout");
  });

  it("queue status prints active, waiting, delayed and the failed line", async () => {
    const run = expectOk(await svc(["queue", "status"], withDaemon()));
    expect(run.stdout).toMatch(/^active: \d+$/m);
    expect(run.stdout).toMatch(/^waiting: \d+$/m);
    expect(run.stdout).toMatch(/^delayed: \d+$/m);
    expect(run.stdout).toMatch(/^failed: 1 in the last 24h, 1 on the queue$/m);
  });

  it("queue status --verbose lists the failed history with --since, --limit, --offset", async () => {
    const run = expectOk(
      await svc(["queue", "status", "--verbose", "--since", "1h", "--limit", "5", "--json"], withDaemon()),
    );
    const json = JSON.parse(run.stdout) as { details: { failed: Record<string, unknown>[] } };
    expect(json.details.failed).toHaveLength(1);
    expect(json.details.failed[0]).toMatchObject({
      task: "invoke",
      lane: "ghost",
      pipeline: "plain",
      trigger: failed.trigger,
      workspace: "/tmp/ws",
      attempts: 1,
      maxAttempts: 1,
    });
    expect(json.details.failed[0]).toHaveProperty("changedAt");
    const skipped = expectOk(
      await svc(["queue", "status", "--verbose", "--offset", "1", "--json"], withDaemon()),
    );
    expect((JSON.parse(skipped.stdout) as { details: { failed: unknown[] } }).details.failed).toEqual([]);
    const text = expectOk(await svc(["queue", "status", "--verbose"], withDaemon()));
    expect(text.stdout).toContain("failed history:");
    expect(text.stdout).toContain(`trigger ${failed.trigger}`);
  });

  it("doctor adds the daemon's probes, naming the out-of-vocabulary token", async () => {
    const run = await svc(["doctor", "--json"], withDaemon());
    const json = JSON.parse(run.stdout) as { checks: { name: string; status: string; detail: string }[] };
    const daemon = json.checks.find((check) => check.name === "daemon");
    expect(daemon?.status).toBe("warning");
    expect(daemon?.detail).toContain("auth.tokens.legacy");
    expect(daemon?.detail).toContain("pipelines:*");
    expect(run.stdout).not.toContain(LEGACY_TOKEN);
  });

  it("the out-of-vocabulary token is refused even where its meaning would apply", async () => {
    const response = await fetch(`${env.SVC_DAEMON_URL}/triggers`, {
      headers: { authorization: `Bearer ${LEGACY_TOKEN}` },
    });
    expect(response.status).toBe(403);
    const reader = await fetch(`${env.SVC_DAEMON_URL}/triggers`, {
      headers: { authorization: `Bearer ${READER_TOKEN}` },
    });
    expect(reader.status).toBe(200);
  });
});

describe("help", () => {
  const commands = [
    ["trace"],
    ["trigger", "list"],
    ["trigger", "stats"],
    ["trigger", "inspect"],
    ["queue", "status"],
    ["token", "issue"],
    ["auth", "setup"],
    ["daemon", "start"],
    ["daemon", "stop"],
    ["daemon", "restart"],
    ["daemon", "status"],
    ["daemon", "reload"],
    ["config", "migrate"],
    ["update"],
    ["db", "stop"],
  ];
  for (const command of commands) {
    it(`svc ${command.join(" ")} --help shows a description and examples`, async () => {
      const run = expectOk(await svc([...command, "--help"], { HOME: work }));
      expect(run.stdout).toContain("DESCRIPTION");
      expect(run.stdout).toContain("EXAMPLES");
    });
  }
});

describe("svc daemon stop and restart", () => {
  it("restart replaces both processes, stop ends them, and status then exits 1", async () => {
    const before = JSON.parse(expectOk(await svc(["daemon", "status", "--json"], withDaemon())).stdout) as {
      processes: { pid: number }[];
    };
    const restarted = JSON.parse(
      expectOk(await svc(["daemon", "restart", "--json"], withDaemon())).stdout,
    ) as {
      url: string;
      roles: { pid: number }[];
    };
    for (const [index, entry] of restarted.roles.entries())
      expect(entry.pid).not.toBe(before.processes[index]!.pid);
    const moved = { SVC_DAEMON_URL: restarted.url };
    expectOk(await svc(["daemon", "status"], withDaemon(moved)));
    const stopped = expectOk(await svc(["daemon", "stop", "--json"], withDaemon(moved)));
    expect(
      (JSON.parse(stopped.stdout) as { roles: { stopped: boolean }[] }).roles.every((role) => role.stopped),
    ).toBe(true);
    const after = await svc(["daemon", "status"], withDaemon(moved));
    expect(after.code).toBe(1);
  }, 240_000);
});
