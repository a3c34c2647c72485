import { describe, expect, it } from "vitest";
import { checkAccepted, printLine, summary, timed, waitForQuiet } from "./support/accounting.ts";
import { drillEnv, SECRETS } from "./support/config.ts";
import {
  bearerRequest,
  codehostRequest,
  isStatus,
  type Outcome,
  statusCounts,
  steady,
  trackerRequest,
  type WebhookRequest,
} from "./support/load.ts";
import { rssKib, startIngress, startWorker } from "./support/processes.ts";
import { startReverseProxy } from "./support/proxy.ts";
import { useDrillStack } from "./support/stack.ts";

const DRILL = "soak";
const SECONDS = Number(process.env.SVC_SOAK_SECONDS ?? 300);
const RATE = Number(process.env.SVC_SOAK_RATE ?? 25);
const SAMPLE_MS = 5_000;
/** the first part of the soak warms caches, JIT and pools up; it is not judged */
const WARMUP_FRACTION = 0.2;
/**
 * Flat: the median RSS of the last third of the judged samples exceeds that of the first third by
 * at most this much (the larger of the two bounds).
 */
const MAX_GROWTH_FRACTION = 0.2;
const MAX_GROWTH_KIB = 24 * 1024;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** least-squares slope of RSS over time, in MiB per minute */
function slopeMibPerMinute(samples: { t: number; kib: number }[]): number {
  const n = samples.length;
  if (n < 2) return 0;
  const mt = samples.reduce((s, x) => s + x.t, 0) / n;
  const mk = samples.reduce((s, x) => s + x.kib, 0) / n;
  const num = samples.reduce((s, x) => s + (x.t - mt) * (x.kib - mk), 0);
  const den = samples.reduce((s, x) => s + (x.t - mt) ** 2, 0);
  return den === 0 ? 0 : (num / den / 1024) * 60_000;
}

describe(`drill: a ${SECONDS} s soak at ${RATE} webhooks per second`, () => {
  const stack = useDrillStack({ concurrency: 4 });

  it("keeps the resident memory of every process flat", { timeout: (SECONDS + 300) * 1000 }, async () => {
    await timed(DRILL, async () => {
      const { database, pool, dir, processes } = stack;
      expect(SECONDS).toBeGreaterThanOrEqual(10);
      const env = drillEnv(dir, database.url);
      const a = await startIngress("ingress-a", env);
      const b = await startIngress("ingress-b", env);
      processes.push(a, b);
      for (const name of ["worker-a", "worker-b"]) processes.push(await startWorker(name, env));
      const proxy = await startReverseProxy([a.url, b.url]);
      stack.proxy = proxy;

      const samples = new Map<string, { t: number; kib: number }[]>(processes.map((p) => [p.name, []]));
      const started = Date.now();
      const sample = async () => {
        for (const p of processes) {
          const kib = await rssKib(p.pid);
          if (kib !== undefined) samples.get(p.name)!.push({ t: Date.now() - started, kib });
        }
      };
      await sample();
      const sampler = setInterval(() => void sample(), SAMPLE_MS);

      // a steady mix: firing and quiet bearer hooks, codehost pushes, tracker issues
      let firing = 0;
      const make = (i: number): WebhookRequest => {
        switch (i % 5) {
          case 0:
          case 1:
            firing++;
            return bearerRequest("hook", SECRETS.DRILL_TOKEN, { n: i }, `soak-${i}`);
          case 2:
            return bearerRequest("quiet", SECRETS.DRILL_TOKEN, { n: i }, `soak-${i}`);
          case 3:
            firing++;
            return codehostRequest("gh", SECRETS.DRILL_CODEHOST_SECRET, "push", { n: i }, `soak-${i}`);
          default:
            firing++;
            return trackerRequest(
              "lin",
              SECRETS.DRILL_TRACKER_SECRET,
              { type: "Issue", action: "create", n: i },
              `soak-${i}`,
            );
        }
      };
      const outcomes: Outcome[] = [];
      let sent: number;
      try {
        sent = await steady(proxy.url, RATE, SECONDS * 1000, make, (o) => outcomes.push(o));
      } finally {
        clearInterval(sampler);
      }
      await sample();
      printLine(DRILL, "load", {
        seconds: SECONDS,
        rate: RATE,
        sent,
        statuses: statusCounts(outcomes),
        proxy_per_upstream: proxy.counts.perUpstream,
        upstream_errors: proxy.counts.errors,
      });
      const judged: Record<string, { start: number; end: number; limit: number; slope: number }> = {};
      for (const p of processes) {
        const all = samples.get(p.name)!;
        const first = all[0]!;
        const last = all[all.length - 1]!;
        const kept = all.filter((s) => s.t >= SECONDS * 1000 * WARMUP_FRACTION);
        const third = Math.max(1, Math.floor(kept.length / 3));
        const start = median(kept.slice(0, third).map((s) => s.kib));
        const end = median(kept.slice(-third).map((s) => s.kib));
        const limit = start + Math.max(MAX_GROWTH_KIB, start * MAX_GROWTH_FRACTION);
        const slope = slopeMibPerMinute(kept);
        judged[p.name] = { start, end, limit, slope };
        printLine(DRILL, `rss ${p.name}`, {
          pid: p.pid,
          samples: all.length,
          first_mib: (first.kib / 1024).toFixed(1),
          last_mib: (last.kib / 1024).toFixed(1),
          after_warmup_start_median_mib: (start / 1024).toFixed(1),
          end_median_mib: (end / 1024).toFixed(1),
          limit_mib: (limit / 1024).toFixed(1),
          slope_mib_per_min: slope.toFixed(2),
          peak_mib: (Math.max(...all.map((s) => s.kib)) / 1024).toFixed(1),
        });
      }

      const quiet = await waitForQuiet(
        pool,
        180_000,
        processes.filter((p) => p.role === "worker"),
      );
      const ids = outcomes
        .filter((o): o is Extract<Outcome, { status: number }> => isStatus(o, 202))
        .map((o) => o.trigger!);
      const stored = await checkAccepted(pool, ids);
      printLine(DRILL, "accounting", {
        sent,
        accepted_202: ids.length,
        distinct_trigger_ids: stored.distinct,
        stored_202_ids: stored.stored,
        stored_with_one_job: stored.withOneJob,
        expected_invocations: firing,
        ...summary(quiet),
      });
      expect(outcomes.length).toBe(sent);
      expect(
        outcomes
          .filter((o) => !isStatus(o, 202))
          .map((o) => ("status" in o ? o.status : o.error))
          .slice(0, 5),
      ).toEqual([]);

      expect(stored.missing).toEqual([]);
      expect(stored.stored).toBe(sent);
      expect(quiet.triggers).toBe(sent);
      expect(quiet.dispatchJobs).toBe(sent);
      expect(quiet.invocations).toBe(firing);
      expect(quiet.invocationsByStatus).toEqual({ completed: firing });
      for (const p of processes) expect(p.alive(), `${p.name} still running`).toBe(true);
      for (const [name, { end, limit }] of Object.entries(judged)) {
        expect(end, `${name}: RSS grew from the first to the last third of the soak`).toBeLessThanOrEqual(
          limit,
        );
      }
    });
  });
});
