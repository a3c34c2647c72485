import { describe, expect, it } from "vitest";
import { checkAccepted, printLine, summary, timed, waitForQuiet } from "./support/accounting.ts";
import { drillEnv, SECRETS } from "./support/config.ts";
import { bearerRequest, burst, isStatus, type Outcome, statusCounts } from "./support/load.ts";
import { type IngressProcess, startIngress, startWorker } from "./support/processes.ts";
import { startReverseProxy } from "./support/proxy.ts";
import { useDrillStack } from "./support/stack.ts";

const DRILL = "ingress-kill";
const REQUESTS = 2_000;
const CONCURRENCY = 32;
/** replica A is SIGKILLed once this many 202s came back: mid-burst, with requests in flight on it */
const KILL_AFTER = 600;

describe("drill: an ingress replica SIGKILLed behind the proxy during a burst", () => {
  const stack = useDrillStack({ concurrency: 4 });

  it("loses nothing acknowledged, and callers' retries store every delivery exactly once", async () => {
    await timed(DRILL, async () => {
      const { database, pool, dir, processes } = stack;
      const env = drillEnv(dir, database.url);
      const a: IngressProcess = await startIngress("ingress-a", env);
      const b: IngressProcess = await startIngress("ingress-b", env);
      processes.push(a, b);
      for (const name of ["worker-a", "worker-b"]) processes.push(await startWorker(name, env));
      const proxy = await startReverseProxy([a.url, b.url]);
      stack.proxy = proxy;

      const requests = Array.from({ length: REQUESTS }, (_, i) =>
        bearerRequest("hook", SECRETS.DRILL_TOKEN, { n: i, padding: "x".repeat(256) }, `kill-${i}`),
      );
      let accepted202 = 0;
      let killedAt = -1;
      const outcomes = await burst(proxy.url, requests, {
        concurrency: CONCURRENCY,
        deadline: Date.now() + 180_000,
        onOutcome: (outcome, index) => {
          if (isStatus(outcome, 202) && ++accepted202 === KILL_AFTER) {
            killedAt = index;
            a.child.kill("SIGKILL");
          }
        },
      });
      const killed = await a.exited;
      expect(killed.signal).toBe("SIGKILL");
      printLine(DRILL, "burst", {
        sent: outcomes.length,
        killed_after_answers: killedAt,
        statuses: statusCounts(outcomes),
        proxy_per_upstream: proxy.counts.perUpstream,
        proxy_502: proxy.counts.badGateway,
        upstream_errors: proxy.counts.errors,
      });
      expect(outcomes.length).toBe(REQUESTS);
      // every answer is a 202 or the proxy's 502 for the cut connections: never a 5xx of svc's
      const other = outcomes.filter((o) => !(isStatus(o, 202) || isStatus(o, 502)));
      expect(other.map((o) => ("status" in o ? `${o.status} ${o.body}` : o.error)).slice(0, 5)).toEqual([]);
      const accepted = outcomes.filter((o): o is Extract<Outcome, { status: number }> => isStatus(o, 202));
      // replica A (upstream 0) acknowledged its share before it died
      const fromKilled = accepted.filter((o) => o.upstream === "0").map((o) => o.trigger!);
      expect(fromKilled.length).toBeGreaterThan(KILL_AFTER / 4);

      // nothing acknowledged is lost, whichever replica acknowledged it
      const acknowledged = await checkAccepted(
        pool,
        accepted.map((o) => o.trigger!),
      );
      const killedReplica = await checkAccepted(pool, fromKilled);
      printLine(DRILL, "acknowledged", {
        accepted_202: accepted.length,
        ...acknowledged,
        acknowledged_by_killed_replica: fromKilled.length,
        of_those_stored: killedReplica.stored,
      });
      expect(killedReplica.stored).toBe(fromKilled.length);
      expect(acknowledged.missing).toEqual([]);
      expect(acknowledged.stored).toBe(accepted.length);
      expect(acknowledged.withOneJob).toBe(accepted.length);
      // the kill cut requests in flight on A
      expect(proxy.counts.badGateway).toBeGreaterThan(0);

      // callers retry what was not acknowledged; the proxy now finds only B
      let pending = outcomes.filter((o) => !isStatus(o, 202)).map((o) => o.request);
      const retried: Outcome[] = [];
      for (let round = 0; round < 5 && pending.length; round++) {
        const answers = await burst(proxy.url, pending, { concurrency: 16, deadline: Date.now() + 60_000 });
        retried.push(...answers);
        pending = answers.filter((o) => !isStatus(o, 202)).map((o) => o.request);
      }
      expect(pending).toEqual([]);
      const all = [
        ...accepted,
        ...retried.filter((o): o is Extract<Outcome, { status: number }> => isStatus(o, 202)),
      ];
      const quiet = await waitForQuiet(
        pool,
        300_000,
        processes.filter((p) => p.role === "worker"),
      );
      const stored = await checkAccepted(
        pool,
        all.map((o) => o.trigger!),
      );
      const keys = await pool.query("SELECT count(DISTINCT delivery_id)::int AS n FROM svc.triggers");
      printLine(DRILL, "accounting", {
        sent: REQUESTS,
        accepted_202: accepted.length,
        unacknowledged: REQUESTS - accepted.length,
        retried_202: all.length - accepted.length,
        retry_statuses: statusCounts(retried),
        distinct_trigger_ids: stored.distinct,
        stored_202_ids: stored.stored,
        stored_with_one_job: stored.withOneJob,
        distinct_delivery_ids: keys.rows[0].n,
        ...summary(quiet),
      });
      expect(stored.missing).toEqual([]);
      expect(stored.distinct).toBe(REQUESTS);
      expect(keys.rows[0].n).toBe(REQUESTS);
      expect(quiet.triggers).toBe(REQUESTS);
      expect(quiet.dispatchJobs).toBe(REQUESTS);
      expect(quiet.orphanJobs).toBe(0);
      expect(quiet.triggersWithoutOneJob).toBe(0);
      expect(quiet.invocations).toBe(REQUESTS);
      expect(quiet.invocationsByStatus).toEqual({ completed: REQUESTS });
      expect(b.alive()).toBe(true);
    });
  });
});
