import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { lineage, waitFor, waitForTrigger } from "../../integration/worker/helpers.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { baseFiles, EXECUTABLES } from "./config-fixture.ts";
import {
  postWebhook,
  type RoleProcess,
  startIngress,
  startWorkerProcess,
  writeConfigDir,
} from "./processes.ts";

const TOKEN = "crash-hook-token";

// the first attempt of a run hangs (recording its process group); every later attempt finishes
const HANG_ONCE = `if [ ! -e "$RUN_DIR/first" ]; then touch "$RUN_DIR/first"; echo $$ > "$RUN_DIR/pgid"; sleep 60; fi; echo ok > "$SURFACE_DIR/done.txt"`;

describe("crash safety and exactly-once runs with several worker processes", () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  let dir: string;
  let ingress: RoleProcess;
  let url: string;
  const workers: RoleProcess[] = [];
  const env: Record<string, string> = {
    HOOK_TOKEN: TOKEN,
    LINEAR_SECRET: "unused",
    SVC_WORKER_HEARTBEAT_MS: "200",
    SVC_WORKER_STALE_MS: "1500",
  };
  const spawnWorker = async (overrides: Record<string, string> = {}) => {
    const worker = await startWorkerProcess({ ...env, ...overrides });
    workers.push(worker);
    return worker;
  };
  const groupAlive = (pgid: number) => {
    try {
      process.kill(-pgid, 0);
      return true;
    } catch {
      return false;
    }
  };

  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    const sources = ["hang", "noop"]
      .map((n) => `    ${n}-hook: { verify: bearer, secret: "\${HOOK_TOKEN}" }`)
      .join("\n");
    dir = await writeConfigDir(
      {
        ...baseFiles(
          {
            sources,
            targets: '  noop:\n    runtime: command\n    command: ["./bin/noop-agent"]\n    timeout: 30s\n',
          },
          {
            "pipelines/hang.yaml": `version: 1.0.0\nagent: helper\ntrigger:\n  webhook: [hang-hook]\ntargets: [noop]\nsetup:\n  - run: ${JSON.stringify(HANG_ONCE)}\ninstructions: hang once\n`,
            "pipelines/noop.yaml": `version: 1.0.0\nagent: helper\ntrigger:\n  webhook: [noop-hook]\ntargets: [noop]\nsetup:\n  - run: echo "$RUN_DIR" >> "${"$"}HOME/ran.log"\ninstructions: nothing\n`,
          },
        ),
        "bin/noop-agent": "#!/bin/sh\necho '{}'\n",
      },
      [...EXECUTABLES, "bin/noop-agent"],
    );
    // steps see HOME: point it at a directory of this test so the run log is ours alone
    env.HOME = dir;
    env.SVC_CONFIG_DIR = dir;
    env.SVC_DATABASE_URL = database.url;
    const started = await startIngress(env);
    ingress = started.role;
    url = started.url;
    pool = new pg.Pool({ connectionString: database.url, max: 2 });
  });

  afterAll(async () => {
    for (const worker of workers) await worker.stop("SIGKILL");
    await ingress?.stop();
    await pool?.end();
    await database?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("SIGKILL of a worker mid-run: after the heartbeat goes stale another worker retries the run; nothing stays running", async () => {
    const victim = await spawnWorker();
    const id = await postWebhook(url, "hang-hook", TOKEN, {});
    const { workloads, invocations } = await waitFor(async () => {
      const found = await lineage(pool, id);
      return found.invocations[0]?.status === "running" && found.tasks.length > 0 ? found : undefined;
    }, "the run to start");
    const runDir = join(dir, "workspaces", workloads[0].id, invocations[0].id, "run");
    await waitFor(
      async () => (await readFile(join(runDir, "pgid"), "utf8").catch(() => "")).trim() !== "",
      "the hanging step",
    );
    const pgid = Number(await readFile(join(runDir, "pgid"), "utf8"));
    expect(groupAlive(pgid)).toBe(true);
    victim.child.kill("SIGKILL");
    await victim.exited;
    // nobody else kills it: the dead worker's spawner takes the orphaned step's process group down
    await waitFor(async () => !groupAlive(pgid), "the killed worker's step to die with it");
    await spawnWorker();
    const trigger = await waitForTrigger(pool, id);
    expect(trigger.status).toBe("completed");
    const after = await lineage(pool, id);
    expect(after.invocations[0]).toMatchObject({ status: "completed", attempts: 2 });
    expect(after.tasks.map((t) => [t.kind, t.status, t.diagnostic?.code ?? null])).toEqual([
      ["setup", "failed", "worker_lost"],
      ["setup", "completed", null],
      ["agent", "completed", null],
      ["result_check", "skipped", null],
    ]);
    const stuck = await pool.query("SELECT id FROM svc.invocations WHERE status = 'running'");
    expect(stuck.rows).toEqual([]);
  });

  it("SIGTERM stops claiming, waits out the grace period, then releases the run for retry", async () => {
    const [current] = workers.slice(-1);
    const id = await postWebhook(url, "hang-hook", TOKEN, {});
    const { workloads, invocations } = await waitFor(async () => {
      const found = await lineage(pool, id);
      return found.invocations[0]?.status === "running" && found.tasks.length > 0 ? found : undefined;
    }, "the run to start");
    const runDir = join(dir, "workspaces", workloads[0].id, invocations[0].id, "run");
    await waitFor(
      async () => (await readFile(join(runDir, "pgid"), "utf8").catch(() => "")).trim() !== "",
      "the hanging step",
    );
    expect(await current!.stop("SIGTERM")).toBe(0);
    expect(current!.logs.some((l) => l.event === "invocation.released")).toBe(true);
    const released = await lineage(pool, id);
    expect(released.invocations[0].status).toBe("queued");
    await spawnWorker();
    expect((await waitForTrigger(pool, id)).status).toBe("completed");
  });

  it("two worker processes drain 500 triggers and every invocation runs exactly once", async () => {
    const alive = () => workers.filter((w) => w.child.exitCode === null && w.child.signalCode === null);
    // the machine is saturated while 500 runs drain: a sub-second staleness bound would reap live runs
    for (const worker of alive()) await worker.stop("SIGTERM");
    await Promise.all(
      Array.from({ length: 2 - alive().length }, () =>
        spawnWorker({ SVC_WORKER_HEARTBEAT_MS: "1000", SVC_WORKER_STALE_MS: "20000" }),
      ),
    );
    expect(alive()).toHaveLength(2);
    const ids: string[] = [];
    for (let batch = 0; batch < 50; batch += 1) {
      ids.push(
        ...(await Promise.all(
          Array.from({ length: 10 }, (_, i) => postWebhook(url, "noop-hook", TOKEN, { n: batch * 10 + i })),
        )),
      );
    }
    await waitFor(
      async () => {
        const { rows } = await pool.query(
          "SELECT count(*)::int AS n FROM svc.triggers WHERE id = ANY($1) AND status IN ('completed', 'error')",
          [ids],
        );
        return rows[0].n === ids.length;
      },
      "500 triggers to finish",
      240_000,
    );
    const { rows } = await pool.query(
      `SELECT i.status, i.attempts, count(*)::int AS n FROM svc.invocations i JOIN svc.workloads w ON w.id = i.workload_id
        WHERE w.trigger_id = ANY($1) GROUP BY 1, 2`,
      [ids],
    );
    const ran = (await readFile(join(dir, "ran.log"), "utf8")).split("\n").filter(Boolean);
    expect(rows).toEqual([{ status: "completed", attempts: 1, n: 500 }]);
    expect(ran).toHaveLength(500);
    expect(new Set(ran).size).toBe(500);
    const byWorker = await pool.query(
      `SELECT i.worker_id, count(*)::int AS n FROM svc.invocations i JOIN svc.workloads w ON w.id = i.workload_id
        WHERE w.trigger_id = ANY($1) GROUP BY 1`,
      [ids],
    );
    expect(byWorker.rows.length).toBe(2);
  }, 300_000);
});
