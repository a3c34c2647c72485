import { describe, expect, it } from "vitest";
import { checkAccepted, printLine, summary, timed, waitForQuiet } from "./support/accounting.ts";
import { drillEnv, SECRETS } from "./support/config.ts";
import { bearerRequest, burst, isStatus, type Outcome, statusCounts } from "./support/load.ts";
import { type IngressProcess, startIngress, startWorker } from "./support/processes.ts";
import { useDrillStack } from "./support/stack.ts";

const DRILL = "worker-kill";
const SLOW_RUNS = 16;
const FAST_RUNS = 300;
/** how long the drill waits for everything to settle after the kill; far below any pg-boss expiry */
const SETTLE_MS = 90_000;

describe("drill: a worker SIGKILLed during agent runs", () => {
  const stack = useDrillStack({ concurrency: 4, slowSeconds: 8 });

  it("retries each affected invocation or fails it with worker_lost; none stays running", async () => {
    await timed(DRILL, async () => {
      const { database, pool, dir, processes } = stack;
      const env = drillEnv(dir, database.url);
      const ingress: IngressProcess = await startIngress("ingress", env);
      processes.push(ingress);
      const victim = await startWorker("worker-victim", env);
      const survivor = await startWorker("worker-survivor", env);
      processes.push(victim, survivor);

      const slow = Array.from({ length: SLOW_RUNS }, (_, i) =>
        bearerRequest("slow-hook", SECRETS.DRILL_TOKEN, { n: i }, `slow-${i}`),
      );
      const slowAnswers = await burst(ingress.url, slow, { concurrency: 8, deadline: Date.now() + 30_000 });
      expect(slowAnswers.filter((o) => isStatus(o, 202)).length).toBe(SLOW_RUNS);

      // both workers hold agent runs
      const deadline = Date.now() + 30_000;
      let running: { id: string; worker_id: string }[] = [];
      while (Date.now() < deadline) {
        running = (await pool.query("SELECT id, worker_id FROM svc.invocations WHERE status = 'running'"))
          .rows;
        const onVictim = running.filter((r) => r.worker_id.includes(`:${victim.pid}:`)).length;
        if (onVictim >= 2 && running.length >= 6) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      // a burst of fast webhooks is being dispatched and queued when the kill lands
      const fast = Array.from({ length: FAST_RUNS }, (_, i) =>
        bearerRequest("hook", SECRETS.DRILL_TOKEN, { n: i }, `fast-${i}`),
      );
      // the kill lands while the victim holds agent runs and the burst is being dispatched: dispatch
      // jobs active, lane jobs fetched but not yet claimed, or part of the burst dispatched
      const held = async () =>
        (
          await pool.query<{ dispatching: number; unclaimed: number; waiting: number; dispatched: number }>(
            `SELECT (SELECT count(*) FROM pgboss.job WHERE name = 'svc-dispatch' AND state = 'active')::int AS dispatching,
                    (SELECT count(*) FROM pgboss.job j JOIN svc.invocations i ON i.id = j.data->>'invocationId'
                      WHERE j.state = 'active' AND i.status = 'queued')::int AS unclaimed,
                    (SELECT count(*) FROM svc.triggers WHERE delivery_id LIKE 'fast-%' AND status = 'queued')::int AS waiting,
                    (SELECT count(*) FROM svc.triggers WHERE delivery_id LIKE 'fast-%' AND status <> 'queued')::int AS dispatched`,
          )
        ).rows[0]!;
      const victimRuns = async () =>
        (
          await pool.query<{ id: string }>(
            "SELECT id FROM svc.invocations WHERE status = 'running' AND worker_id LIKE $1",
            [`%:${victim.pid}:%`],
          )
        ).rows;
      let affected: { id: string }[] = [];
      let atKill: Awaited<ReturnType<typeof held>> | undefined;
      let killedAtAnswer = 0;
      let answers = 0;
      const sending = burst(ingress.url, fast, {
        concurrency: 16,
        deadline: Date.now() + 60_000,
        onOutcome: () => {
          answers++;
        },
      });
      const watchUntil = Date.now() + 30_000;
      while (!atKill && Date.now() < watchUntil) {
        const now = await held();
        const inFlight =
          now.dispatching > 0 || now.unclaimed >= 2 || (now.dispatched >= 20 && now.waiting > 0);
        const running = inFlight ? await victimRuns() : [];
        if ((inFlight && running.length > 0) || Date.now() >= watchUntil - 100) {
          victim.child.kill("SIGKILL");
          atKill = now;
          killedAtAnswer = answers;
        } else await new Promise((resolve) => setTimeout(resolve, 25));
      }
      if (!atKill) {
        victim.child.kill("SIGKILL");
        atKill = await held();
      }
      // what the victim held when it died: its rows still `running` once it is gone (the reaper
      // takes them over only after SVC_WORKER_STALE_MS, 2 s)
      await victim.exited;
      affected = await victimRuns();
      const fastAnswers = await sending;
      const afterKill = await pool.query<{ status: string; n: number }>(
        "SELECT status, count(*)::int AS n FROM svc.invocations GROUP BY 1 ORDER BY 1",
      );
      printLine(DRILL, "kill", {
        victim_pid: victim.pid,
        killed_after_fast_answers: killedAtAnswer,
        active_dispatch_jobs_at_kill: atKill.dispatching,
        fetched_unclaimed_lane_jobs_at_kill: atKill.unclaimed,
        fast_triggers_dispatched_at_kill: atKill.dispatched,
        fast_triggers_waiting_at_kill: atKill.waiting,
        running_before_kill: running.length,
        affected_running_on_victim: affected.length,
        invocations_after_kill: Object.fromEntries(afterKill.rows.map((r) => [r.status, r.n])),
      });
      expect(fastAnswers.filter((o) => isStatus(o, 202)).length).toBe(FAST_RUNS);
      expect(affected.length).toBeGreaterThanOrEqual(1);

      const quiet = await waitForQuiet(pool, SETTLE_MS, [survivor]);
      const ids = [...slowAnswers, ...fastAnswers]
        .filter((o): o is Extract<Outcome, { status: number }> => isStatus(o, 202))
        .map((o) => o.trigger!);
      const stored = await checkAccepted(pool, ids);
      const fates = await pool.query<{ id: string; status: string; attempts: number; code: string | null }>(
        "SELECT id, status, attempts, diagnostic->>'code' AS code FROM svc.invocations WHERE id = ANY($1)",
        [affected.map((r) => r.id)],
      );
      const retried = fates.rows.filter((r) => r.status === "completed" && r.attempts >= 2).length;
      const lost = fates.rows.filter((r) => r.status === "failed" && r.code === "worker_lost").length;
      const stuck = await pool.query<{ id: string; status: string; jobs: string }>(
        `SELECT i.id, i.status, (SELECT string_agg(j.state::text, ',') FROM pgboss.job j WHERE j.data->>'invocationId' = i.id) AS jobs
           FROM svc.invocations i WHERE i.status IN ('queued', 'running')`,
      );
      const stuckTriggers = await pool.query<{ id: string; status: string; job: string }>(
        `SELECT t.id, t.status, (SELECT string_agg(j.state::text, ',') FROM pgboss.job j WHERE j.data->>'triggerId' = t.id) AS job
           FROM svc.triggers t WHERE t.status IN ('queued')`,
      );
      printLine(DRILL, "accounting", {
        accepted_202: ids.length,
        statuses: statusCounts([...slowAnswers, ...fastAnswers]),
        stored_202_ids: stored.stored,
        stored_with_one_job: stored.withOneJob,
        affected: affected.length,
        affected_retried_and_completed: retried,
        affected_failed_worker_lost: lost,
        stuck_invocations: stuck.rows.length,
        stuck_invocation_jobs: [...new Set(stuck.rows.map((r) => `${r.status}/${r.jobs}`))],
        stuck_queued_triggers: stuckTriggers.rows.length,
        stuck_trigger_jobs: [...new Set(stuckTriggers.rows.map((r) => r.job))],
        settle_bound_ms: SETTLE_MS,
        ...summary(quiet),
      });
      expect(stored.missing).toEqual([]);
      expect(retried + lost).toBe(affected.length);
      expect(stuck.rows).toEqual([]);
      expect(stuckTriggers.rows).toEqual([]);
      expect(quiet.triggers).toBe(SLOW_RUNS + FAST_RUNS);
      expect(quiet.dispatchJobs).toBe(SLOW_RUNS + FAST_RUNS);
      expect(quiet.invocations).toBe(SLOW_RUNS + FAST_RUNS);
      expect(quiet.invocationsByStatus.running ?? 0).toBe(0);
      expect(quiet.invocationsByStatus.queued ?? 0).toBe(0);
      expect((quiet.invocationsByStatus.completed ?? 0) + (quiet.failedCodes.worker_lost ?? 0)).toBe(
        SLOW_RUNS + FAST_RUNS,
      );
      expect(survivor.alive()).toBe(true);
    });
  });
});
