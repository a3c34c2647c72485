import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type EmbeddedPostgres, startEmbeddedPostgres } from "../../db/embedded.ts";
import { checkAccepted, printLine, summary, timed, waitForQuiet } from "./support/accounting.ts";
import { drillEnv, SECRETS, writeDrillConfig } from "./support/config.ts";
import { bearerRequest, burst, isStatus, type Outcome, statusCounts, steady } from "./support/load.ts";
import {
  type IngressProcess,
  type SvcProcess,
  startIngress,
  startWorker,
  stopAll,
} from "./support/processes.ts";

const DRILL = "postgres-restart";
const RATE = 50;
const DURATION_MS = 24_000;
/** Postgres stops this long after the burst starts, and stays down this long */
const STOP_AT_MS = 6_000;
const DOWN_MS = 5_000;

/**
 * The drill's own embedded Postgres (never the machine's shared server): stopped with pg_ctl in the
 * middle of a steady burst and started again on the same data directory and port.
 */
describe("drill: Postgres restarted during a burst", () => {
  let root: string;
  let server: EmbeddedPostgres;
  let pool: pg.Pool;
  let dir: string;
  const processes: SvcProcess[] = [];

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), "svc-drill-pg-"));
    // as root the server runs as the postgres user, which must be able to enter this directory
    await chmod(root, 0o755);
    server = await startEmbeddedPostgres({ dataDir: join(root, "postgres"), database: "drill" });
    pool = new pg.Pool({ connectionString: server.url, max: 2 });
    pool.on("error", () => {});
    dir = await writeDrillConfig({ concurrency: 4 });
  });
  afterAll(async () => {
    await stopAll(processes);
    await pool?.end().catch(() => {});
    await server?.stop().catch(() => {});
    if (root) await rm(root, { recursive: true, force: true });
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("answers every request 202 or 503, stores every 202, and ingress and worker recover without a restart", async () => {
    await timed(DRILL, async () => {
      const env = drillEnv(dir, server.url);
      const ingress: IngressProcess = await startIngress("ingress", env);
      processes.push(ingress);
      const worker = await startWorker("worker", env);
      processes.push(worker);

      const outcomes: Outcome[] = [];
      const started = Date.now();
      let downFor = 0;
      const outage = (async () => {
        await new Promise((resolve) => setTimeout(resolve, STOP_AT_MS));
        const stopping = Date.now();
        await server.stop();
        printLine(DRILL, "postgres", {
          stopped_after_ms: stopping - started,
          answers_before_stop: outcomes.length,
        });
        await new Promise((resolve) => setTimeout(resolve, DOWN_MS));
        server = await startEmbeddedPostgres({ dataDir: join(root, "postgres"), database: "drill" });
        downFor = Date.now() - stopping;
        printLine(DRILL, "postgres", { started_again_after_ms: Date.now() - started, down_ms: downFor });
      })();
      const sent = await steady(
        ingress.url,
        RATE,
        DURATION_MS,
        (i) => bearerRequest("hook", SECRETS.DRILL_TOKEN, { n: i }, `pg-${i}`),
        (outcome) => outcomes.push(outcome),
      );
      await outage;
      printLine(DRILL, "burst", { sent, answered: outcomes.length, statuses: statusCounts(outcomes) });

      expect(outcomes.length).toBe(sent);
      // every request got 202 or 503: no 500, no dropped connection
      const other = outcomes.filter((o) => !(isStatus(o, 202) || isStatus(o, 503)));
      expect(other.map((o) => ("status" in o ? `${o.status} ${o.body}` : o.error)).slice(0, 5)).toEqual([]);
      const refused = outcomes.filter((o) => isStatus(o, 503));
      // the outage really hit the burst
      expect(refused.length).toBeGreaterThan(0);
      for (const o of refused)
        expect(JSON.parse((o as { body: string }).body).error.code).toBe("database_unavailable");
      const accepted = outcomes.filter((o): o is Extract<Outcome, { status: number }> => isStatus(o, 202));
      const firstCheck = await checkAccepted(
        pool,
        accepted.map((o) => o.trigger!),
      );
      printLine(DRILL, "accepted-before-retry", { accepted_202: accepted.length, ...firstCheck });
      expect(firstCheck.missing).toEqual([]);
      expect(firstCheck.withOneJob).toBe(accepted.length);

      // the same ingress (no restart) now stores what it refused: callers retry their 503s
      let pending = refused.map((o) => o.request);
      const retried: Outcome[] = [];
      for (let round = 0; round < 5 && pending.length; round++) {
        const answers = await burst(ingress.url, pending, { concurrency: 16, deadline: Date.now() + 60_000 });
        retried.push(...answers);
        pending = answers.filter((o) => !isStatus(o, 202)).map((o) => o.request);
        if (pending.length) await new Promise((resolve) => setTimeout(resolve, 1_000));
      }
      printLine(DRILL, "retry", {
        retried: refused.length,
        statuses: statusCounts(retried),
        still_refused: pending.length,
      });
      expect(pending).toEqual([]);
      const all = [
        ...accepted,
        ...retried.filter((o): o is Extract<Outcome, { status: number }> => isStatus(o, 202)),
      ];

      // the worker (not restarted) drains everything
      const quiet = await waitForQuiet(pool, 180_000, [worker]);
      const stored = await checkAccepted(
        pool,
        all.map((o) => o.trigger!),
      );
      printLine(DRILL, "accounting", {
        sent,
        accepted_202: accepted.length,
        refused_503: refused.length,
        retried_202: all.length - accepted.length,
        distinct_trigger_ids: stored.distinct,
        stored_202_ids: stored.stored,
        stored_with_one_job: stored.withOneJob,
        postgres_down_ms: downFor,
        ...summary(quiet),
      });
      printLine(DRILL, "processes", {
        ingress_pid: ingress.pid,
        worker_pid: worker.pid,
        ingress_unavailable_logged: ingress.events.get("webhook.unavailable") ?? 0,
        worker_events: Object.fromEntries(
          [...worker.events].filter(([event]) => !/^(invocation|trigger)\./.test(event)),
        ),
        worker_log: worker.logFile,
      });
      expect(stored.missing).toEqual([]);
      expect(stored.distinct).toBe(sent);
      expect(quiet.triggers).toBe(sent);
      expect(quiet.dispatchJobs).toBe(sent);
      expect(quiet.orphanJobs).toBe(0);
      expect(quiet.triggersWithoutOneJob).toBe(0);
      expect(quiet.invocations).toBe(sent);
      expect(quiet.invocationsByStatus).toEqual({ completed: sent });
      expect(quiet.triggersByStatus).toEqual({ completed: sent });
      const keys = await pool.query("SELECT count(DISTINCT delivery_id)::int AS n FROM svc.triggers");
      expect(keys.rows[0].n).toBe(sent);
      // the same processes served before and after
      expect(ingress.alive()).toBe(true);
      expect(worker.alive()).toBe(true);
    });
  });
});
