import { describe, expect, it } from "vitest";
import { printLine, summary, timed, waitForQuiet } from "./support/accounting.ts";
import { drillEnv, SECRETS, writeConfigFiles } from "./support/config.ts";
import { bearerRequest, burst, isStatus } from "./support/load.ts";
import { startIngress, startWorker } from "./support/processes.ts";
import { useDrillStack } from "./support/stack.ts";

const DRILL = "group-worker-kill";
/** how long the drill waits for everything to settle after the kill: the reaper, then one slow run */
const SETTLE_MS = 90_000;
const GROUP = "pull_request:grouped:acme/drill#7";

/**
 * A worker SIGKILLed while it holds a concurrency group: the group must not stay blocked. Its
 * holder is read from the invocations' own statuses, so once the reaper takes the dead worker's
 * run back, the group's newest waiting run gets its lane job and runs to completion on the
 * surviving worker; the dead worker's run, overtaken by it, ends superseded instead of running again.
 */
describe("drill: a worker SIGKILLed while it holds a concurrency group", () => {
  const stack = useDrillStack({ concurrency: 2, slowSeconds: 6 });

  it("the reaper frees the group and the newest waiting run completes; never two of the group run at once", async () => {
    await timed(DRILL, async () => {
      const { database, pool, dir, processes } = stack;
      // `quiet` fires nothing in the drill configuration: here it fires this grouped pipeline alone
      await writeConfigFiles(dir, {
        "pipelines/grouped.yaml": `version: 1.0.0
agent: helper
trigger:
  webhook: [quiet]
concurrency:
  group: pull_request
  cancel_in_progress: false
targets: [slow]
setup:
  - run: "true"
instructions: review the pull request
`,
      });
      const env = drillEnv(dir, database.url);
      const ingress = await startIngress("ingress", env);
      processes.push(ingress);
      const victim = await startWorker("worker-victim", env);
      processes.push(victim);

      let most = 0;
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          const { rows } = await pool.query<{ n: number }>(
            "SELECT count(*)::int AS n FROM svc.invocations WHERE concurrency_group = $1 AND status = 'running'",
            [GROUP],
          );
          most = Math.max(most, rows[0]!.n);
          await new Promise((resolve) => setTimeout(resolve, 25));
        }
      })();

      const post = async (n: number) => {
        const [answer] = await burst(
          ingress.url,
          [
            bearerRequest(
              "quiet",
              SECRETS.DRILL_TOKEN,
              { repo: "acme/drill", number: 7, push: n },
              `push-${n}`,
            ),
          ],
          { concurrency: 1, deadline: Date.now() + 30_000 },
        );
        expect(answer && isStatus(answer, 202)).toBe(true);
        return (answer as { trigger?: string }).trigger!;
      };
      const invocationOf = async (trigger: string) =>
        (
          await pool.query<{
            id: string;
            status: string;
            worker_id: string | null;
            code: string | null;
            message: string | null;
            attempts: number;
          }>(
            `SELECT i.id, i.status, i.worker_id, i.attempts, i.diagnostic->>'code' AS code, i.diagnostic->>'message' AS message
               FROM svc.invocations i JOIN svc.workloads w ON w.id = i.workload_id WHERE w.trigger_id = $1`,
            [trigger],
          )
        ).rows[0];
      const until = async <T>(check: () => Promise<T | undefined>, what: string, boundMs = 30_000) => {
        const deadline = Date.now() + boundMs;
        for (;;) {
          const value = await check();
          if (value !== undefined) return value;
          if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      };

      const held = await post(1);
      await until(async () => {
        const row = await invocationOf(held);
        return row?.status === "running" && row.worker_id?.includes(`:${victim.pid}:`) ? row : undefined;
      }, "the victim to hold the group");
      const overtaken = await post(2);
      const newest = await post(3);
      await until(
        async () => ((await invocationOf(newest))?.status === "queued" ? true : undefined),
        "the newest to wait",
      );
      expect(await invocationOf(overtaken)).toMatchObject({ status: "cancelled", code: "superseded" });

      victim.child.kill("SIGKILL");
      await victim.exited;
      const killedAt = Date.now();
      const atKill = await invocationOf(held);
      const survivor = await startWorker("worker-survivor", env);
      processes.push(survivor);

      const quiet = await waitForQuiet(pool, SETTLE_MS, [survivor]);
      sampling = false;
      await sampler;
      const [heldEnd, overtakenEnd, newestEnd] = await Promise.all(
        [held, overtaken, newest].map(invocationOf),
      );
      printLine(DRILL, "accounting", {
        victim_pid: victim.pid,
        held_at_kill: atKill?.status,
        held_end: `${heldEnd?.status}/${heldEnd?.code}`,
        overtaken_end: `${overtakenEnd?.status}/${overtakenEnd?.code}`,
        newest_end: `${newestEnd?.status}/attempts=${newestEnd?.attempts}`,
        quiet_after_kill_ms: Date.now() - killedAt,
        most_running_in_group: most,
        settle_bound_ms: SETTLE_MS,
        ...summary(quiet),
      });
      expect(atKill?.status).toBe("running");
      // overtaken by the newest waiting run: it does not run again after the reaper took it back
      expect(heldEnd).toMatchObject({
        status: "cancelled",
        code: "superseded",
        message: `superseded by trigger ${newest} (a newer event of concurrency group ${GROUP})`,
      });
      expect(overtakenEnd).toMatchObject({ status: "cancelled", code: "superseded" });
      expect(newestEnd).toMatchObject({ status: "completed", attempts: 1 });
      expect(newestEnd?.worker_id).toContain(`:${survivor.pid}:`);
      expect(most).toBe(1);
      expect(quiet.invocationsByStatus.running ?? 0).toBe(0);
      expect(quiet.invocationsByStatus.queued ?? 0).toBe(0);
      expect(quiet.triggersByStatus.queued ?? 0).toBe(0);
      expect(quiet.triggersByStatus.running ?? 0).toBe(0);
      expect(survivor.alive()).toBe(true);
    });
  });
});
