import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { lineage, waitFor, waitForTrigger } from "../../integration/worker/helpers.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { svc } from "../cli/support.ts";
import { baseFiles, EXECUTABLES } from "./config-fixture.ts";
import { type RoleProcess, startIngress, startWorkerProcess, writeConfigDir } from "./processes.ts";

/**
 * `trigger.schedule` with real processes: two workers register the same `* * * * *` schedule on
 * pg-boss's scheduler, whose cron check runs every second (SVC_SCHEDULE_CHECK_SECONDS=1, so each
 * tick is raced by about sixty passes of two instances), for two ticks (each a minute of the
 * suite's time: two show exactly-once as well as three did).
 */
const TOKEN = "e2e-hook-token-0123456789";
const MINUTE = 60_000;

const TICK_PIPELINE = `version: 1.0.0
agent: helper
targets: [local]
args:
  label: { type: string, required: true }
trigger:
  schedule:
    - cron: "* * * * *"
      args: { label: every-minute }
setup:
  - run: env > "$RUN_DIR/env.txt"
instructions: |
  Look at the clock.
`;

describe("schedules fired by two worker processes", () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  let dir: string;
  let ingress: RoleProcess;
  let workers: RoleProcess[] = [];
  let env: Record<string, string>;
  let url: string;
  let startedAt: number;

  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    dir = await writeConfigDir(baseFiles({}, { "pipelines/tick.yaml": TICK_PIPELINE }), EXECUTABLES);
    env = {
      SVC_CONFIG_DIR: dir,
      SVC_DATABASE_URL: database.url,
      HOOK_TOKEN: TOKEN,
      LINEAR_SECRET: "e2e-linear-secret",
      SVC_SCHEDULE_CHECK_SECONDS: "1",
    };
    const started = await startIngress(env);
    ingress = started.role;
    url = started.url;
    workers = await Promise.all([startWorkerProcess(env), startWorkerProcess(env)]);
    startedAt = Date.now();
    pool = new pg.Pool({ connectionString: database.url, max: 2 });
  });

  afterAll(async () => {
    await Promise.all(workers.map((worker) => worker.stop()));
    await ingress?.stop();
    await pool?.end();
    await database?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function ticks(): Promise<{ id: string; delivery_id: string; payload: Record<string, unknown> }[]> {
    const { rows } = await pool.query(
      `SELECT id, delivery_id, payload FROM svc.triggers
        WHERE kind = 'schedule' AND source = 'tick' AND delivery_id IS NOT NULL ORDER BY delivery_id`,
    );
    return rows;
  }

  it(
    "over two minutes each tick fires exactly once",
    async () => {
      const first = Math.ceil(startedAt / MINUTE) * MINUTE;
      const expected = [0, 1].map((i) => new Date(first + i * MINUTE).toISOString());
      await waitFor(
        async () => {
          const fired = (await ticks()).map((t) => t.delivery_id);
          return fired.includes(expected[1]!);
        },
        "the second tick to fire",
        4 * MINUTE,
      );
      // a moment for a late duplicate to show up, were there one
      await new Promise((resolve) => setTimeout(resolve, 5_000));
      const fired = await ticks();
      const since = fired.filter((t) => Date.parse(t.delivery_id) >= first);
      expect(since.map((t) => t.delivery_id)).toEqual(expected);
      // a tick fired at start-up, if any, is the minute before: nothing else is a trigger of this schedule
      const before = fired.filter((t) => Date.parse(t.delivery_id) < first);
      expect(before.length).toBeLessThanOrEqual(1);
      for (const tick of fired) {
        expect(tick.payload).toEqual({
          schedule: "tick",
          cron: "* * * * *",
          scheduled_for: tick.delivery_id,
          args: { label: "every-minute" },
        });
      }
      // both workers raced for them: each process logged only the ticks it won
      const wins = workers.map((worker) => worker.logs.filter((l) => l.event === "schedule.fired").length);
      expect(wins.reduce((a, b) => a + b, 0)).toBe(fired.length);
      const runNow = await pool.query(
        "SELECT count(*)::int AS n FROM svc.triggers WHERE kind = 'schedule' AND delivery_id IS NULL",
      );
      expect(runNow.rows[0].n).toBe(0);

      // the run: EVENT_NAME and EVENT_SOURCE are `schedule`, PAYLOAD_JSON the payload
      const last = since[1]!;
      await waitForTrigger(pool, last.id);
      const { workloads, invocations } = await lineage(pool, last.id);
      expect(workloads.map((w) => w.pipeline)).toEqual(["tick"]);
      const envText = await readFile(
        join(dir, "workspaces", workloads[0].id, invocations[0].id, "run", "env.txt"),
        "utf8",
      );
      expect(envText).toContain("EVENT_NAME=schedule\n");
      expect(envText).toContain("EVENT_SOURCE=schedule\n");
      const payloadLine = envText.split("\n").find((l) => l.startsWith("PAYLOAD_JSON="))!;
      expect(JSON.parse(payloadLine.slice("PAYLOAD_JSON=".length))).toEqual(last.payload);
    },
    5 * MINUTE,
  );

  it("svc schedule list shows the schedule, its next run and its last run with the trigger", async () => {
    const run = await svc(["schedule", "list", "--json"], { SVC_DAEMON_URL: url, HOME: dir });
    expect(run.code, run.stderr).toBe(0);
    const { schedules } = JSON.parse(run.stdout) as {
      schedules: { name: string; lastRun: { at: string; trigger: string } | null; nextRun: string }[];
    };
    const latest = (await ticks()).at(-1)!;
    expect(schedules).toMatchObject([
      { name: "tick", pipeline: "tick", cron: "* * * * *", timezone: "UTC", lastRun: { trigger: latest.id } },
    ]);
    expect(Date.parse(schedules[0]!.nextRun) % MINUTE).toBe(0);
    const table = await svc(["schedule", "list"], { SVC_DAEMON_URL: url, HOME: dir });
    expect(table.stdout.split("\n")[0]).toMatch(
      /^NAME\s+PIPELINE\s+CRON\s+TIMEZONE\s+NEXT RUN\s+LAST RUN\s+TRIGGER$/,
    );
    expect(table.stdout).toContain(latest.id);
  });

  it("svc schedule run fires it now, recorded as kind schedule; an unknown name exits 1", async () => {
    const run = await svc(["schedule", "run", "tick"], { SVC_DAEMON_URL: url, HOME: dir });
    expect(run.code, run.stderr).toBe(0);
    const id = run.stdout.trim();
    expect(id).toMatch(/^trg_/);
    const trigger = await waitForTrigger(pool, id);
    expect(trigger).toMatchObject({
      kind: "schedule",
      source: "tick",
      event_name: "schedule",
      status: "completed",
    });
    expect(trigger.payload).toMatchObject({ schedule: "tick", args: { label: "every-minute" } });

    const unknown = await svc(["schedule", "run", "nope"], { SVC_DAEMON_URL: url, HOME: dir });
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no schedule named "nope"');
  });

  it("both commands have --help with a description and examples", async () => {
    for (const command of ["list", "run"]) {
      const help = await svc(["schedule", command, "--help"], { HOME: dir });
      expect(help.stdout).toContain("DESCRIPTION");
      expect(help.stdout).toContain("EXAMPLES");
    }
  });
});
