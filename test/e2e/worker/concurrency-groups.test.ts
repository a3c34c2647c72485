import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor, waitForTrigger } from "../../integration/worker/helpers.ts";
import { type GroupStack, openGroupStack, processAlive, REPOS, reviewBodies } from "./group-fixture.ts";

const running = (invocation: Record<string, unknown>) => invocation.status === "running";
const ended = (status: string) => (invocation: Record<string, unknown>) => invocation.status === status;

function superseded(by: string, group: string) {
  return {
    code: "superseded",
    message: `superseded by trigger ${by} (a newer event of concurrency group ${group})`,
  };
}

describe("concurrency groups and incremental reviews (real ingress, workers, git and code host)", () => {
  let stack: GroupStack;

  beforeAll(async () => {
    stack = await openGroupStack();
    await stack.startWorker();
  });

  afterAll(async () => {
    await stack?.close();
  });

  const previousOf = (runDir: string) => readFile(join(runDir, "previous.txt"), "utf8");
  const setupLog = async () =>
    (await readFile(join(stack.dir, "setup.log"), "utf8").catch(() => "")).split("\n").filter(Boolean);

  it("cancel_in_progress: each newer push cancels the running review (superseded, naming the newer trigger), its process dies, and only the newest review is published", async () => {
    const { pool, github } = stack;
    const repo = REPOS.cancelling;
    const group = `pull_request:cancelling:${repo}#11`;
    const [a, b, c] = ["a", "b", "c"].map((line) => stack.commit("pr-11", `pr-11 ${line}`));
    await stack.hold(a!);
    await stack.hold(b!);
    const first = await stack.push(repo, 11, a!, "opened");
    const firstRun = await stack.runOf(first, running, "the first review to run");
    const firstPid = await stack.agentPid(firstRun.runDir);
    const second = await stack.push(repo, 11, b!);
    const secondRun = await stack.runOf(second, running, "the second review to run");
    const secondPid = await stack.agentPid(secondRun.runDir);
    const firstEnd = await stack.runOf(first, ended("cancelled"), "the first review to be superseded");
    expect(firstEnd.invocation.diagnostic).toEqual(superseded(second, group));
    const third = await stack.push(repo, 11, c!);
    const secondEnd = await stack.runOf(second, ended("cancelled"), "the second review to be superseded");
    expect(secondEnd.invocation.diagnostic).toEqual(superseded(third, group));
    expect((await waitForTrigger(pool, third)).status).toBe("completed");
    // the superseded agents' process groups were killed, not left to finish
    await waitFor(
      async () => !processAlive(firstPid) && !processAlive(secondPid),
      "the superseded agents to die",
    );
    // were their holds lifted now, nothing of them is left to publish
    await stack.release(a!);
    await stack.release(b!);
    for (const trigger of [first, second])
      expect((await waitForTrigger(pool, trigger)).status).toBe("completed");
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(reviewBodies(github, repo, 11)).toEqual([`reviewed ${c} since`]);
    const { rows } = await pool.query(
      "SELECT count(*)::int AS n FROM svc.output_deliveries d WHERE d.invocation_id = ANY($1)",
      [[firstRun.invocation.id, secondRun.invocation.id]],
    );
    expect(rows[0].n).toBe(0);
  });

  it("cancel_in_progress false: of a burst of five pushes one runs, one waits unclaimed, three are superseded; the waiting one runs when the first ends, with PREVIOUS_SHA", async () => {
    const { pool, github } = stack;
    const repo = REPOS.waiting;
    const group = `pull_request:waiting:${repo}#21`;
    const shas = [1, 2, 3, 4, 5].map((n) => stack.commit("pr-21", `pr-21 push ${n}`));
    await stack.hold(shas[0]!);
    const triggers = [await stack.push(repo, 21, shas[0]!, "opened")];
    const firstRun = await stack.runOf(triggers[0]!, running, "the first review to run");
    for (const sha of shas.slice(1)) triggers.push(await stack.push(repo, 21, sha));
    const runs = await Promise.all(
      triggers.slice(1, 4).map((trigger) => stack.runOf(trigger, ended("cancelled"), "a superseded push")),
    );
    // each names a later push: which one depends on how the pushes fell into dispatch batches
    for (const [index, run] of runs.entries()) {
      const diagnostic = run.invocation.diagnostic as { code: string; message: string };
      const by = /^superseded by trigger (\S+) \(a newer event of concurrency group (.+)\)$/.exec(
        diagnostic.message,
      );
      expect(diagnostic.code).toBe("superseded");
      expect(by?.[2]).toBe(group);
      expect(triggers.slice(index + 2)).toContain(by?.[1]);
    }
    const waiting = await stack.runOf(triggers[4]!, ended("queued"), "the newest push to wait");
    // it waits, unclaimed, as long as the first runs: no worker, no attempt, no process
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const still = await stack.runOf(triggers[4]!);
    expect(still.invocation).toMatchObject({ status: "queued", worker_id: null, attempts: 0 });
    expect((await stack.runOf(triggers[0]!)).invocation.status).toBe("running");
    expect(await setupLog()).not.toContain(shas[4]);
    await stack.release(shas[0]!);
    expect((await waitForTrigger(pool, triggers[0]!)).status).toBe("completed");
    expect((await waitForTrigger(pool, triggers[4]!)).status).toBe("completed");
    const last = await stack.runOf(triggers[4]!);
    expect(last.invocation).toMatchObject({ status: "completed", attempts: 1 });
    expect(last.runDir).toBe(waiting.runDir);
    // the waiting head builds on the first one's: it reviews what changed since it
    expect(await previousOf(last.runDir)).toBe(shas[0]);
    expect(await previousOf(firstRun.runDir)).toBe("");
    // five pushes, two processes
    expect((await setupLog()).filter((sha) => shas.includes(sha))).toEqual([shas[0], shas[4]]);
    expect(reviewBodies(github, repo, 21)).toEqual([
      `reviewed ${shas[0]} since`,
      `reviewed ${shas[4]} since ${shas[0]}`,
    ]);
    for (const trigger of triggers.slice(1, 4))
      expect((await waitForTrigger(pool, trigger)).status).toBe("completed");
  });

  it("PREVIOUS_SHA is the head the group's last completed run reviewed, and empty after a force push", async () => {
    const repo = REPOS.cancelling;
    const first = stack.commit("pr-12", "pr-12 first");
    const opened = await stack.push(repo, 12, first, "opened");
    await waitForTrigger(stack.pool, opened);
    const second = stack.commit("pr-12", "pr-12 second");
    const pushed = await stack.push(repo, 12, second);
    await waitForTrigger(stack.pool, pushed);
    const secondRun = await stack.runOf(pushed);
    expect(await previousOf(secondRun.runDir)).toBe(first);
    const prompt = await readFile(join(secondRun.runDir, "prompt.txt"), "utf8");
    expect(prompt).toContain(`reviewed ${first}, an ancestor of this head ($PREVIOUS_SHA)`);
    // rewritten history: the new head does not contain the reviewed one
    const rewritten = stack.commit("pr-12", "pr-12 rewritten", "main");
    const forced = await stack.push(repo, 12, rewritten);
    await waitForTrigger(stack.pool, forced);
    const forcedRun = await stack.runOf(forced);
    expect(forcedRun.invocation.status).toBe("completed");
    expect(await previousOf(forcedRun.runDir)).toBe("");
    expect(await readFile(join(forcedRun.runDir, "prompt.txt"), "utf8")).toContain(
      "($PREVIOUS_SHA is empty): review everything",
    );
    // another pull request's group is another group: nothing of #12 reaches it
    const other = stack.commit("pr-13", "pr-13 first", rewritten);
    const otherRun = await stack.runOf(await stack.push(repo, 13, other, "opened"), ended("completed"));
    expect(await previousOf(otherRun.runDir)).toBe("");
  });

  it("two workers competing for one group never run two of its invocations at once", async () => {
    const { pool } = stack;
    const second = await stack.startWorker();
    const repo = REPOS.waiting;
    const group = `pull_request:waiting:${repo}#31`;
    const shas: string[] = [];
    const triggers: string[] = [];
    let most = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const { rows } = await pool.query(
          "SELECT count(*)::int AS n FROM svc.invocations WHERE concurrency_group = $1 AND status = 'running'",
          [group],
        );
        most = Math.max(most, rows[0].n);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    // every agent holds until 300 ms after it started
    const released = new Set<string>();
    let releasing = true;
    const releaser = (async () => {
      while (releasing) {
        const log = (await readFile(join(stack.dir, "agents.log"), "utf8").catch(() => "")).split("\n");
        for (const line of log) {
          const [kind, sha, at] = line.split(" ");
          if (kind !== "start" || !sha || released.has(sha) || !shas.includes(sha)) continue;
          if (Date.now() - Number(at) / 1e6 < 300) continue;
          released.add(sha);
          await stack.release(sha);
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    for (let round = 0; round < 3; round += 1) {
      const batch = [0, 1, 2].map((n) => stack.commit("pr-31", `pr-31 round ${round} push ${n}`));
      for (const sha of batch) await stack.hold(sha);
      shas.push(...batch);
      triggers.push(
        ...(await Promise.all(
          batch.map((sha, n) => stack.push(repo, 31, sha, round === 0 && n === 0 ? "opened" : "synchronize")),
        )),
      );
      await new Promise((resolve) => setTimeout(resolve, 400));
    }
    for (const trigger of triggers) expect((await waitForTrigger(pool, trigger)).status).toBe("completed");
    sampling = false;
    releasing = false;
    await Promise.all([sampler, releaser]);
    expect(most).toBe(1);
    // the agents' own clocks: each run of the group ended before the next one started
    const log = (await readFile(join(stack.dir, "agents.log"), "utf8"))
      .split("\n")
      .map((line) => line.split(" "))
      .filter(([, sha]) => sha && shas.includes(sha));
    const spans = new Map<string, { start: number; end: number }>();
    for (const [kind, sha, at] of log) {
      const span = spans.get(sha!) ?? { start: 0, end: Number.POSITIVE_INFINITY };
      if (kind === "start") span.start = Number(at);
      else span.end = Number(at);
      spans.set(sha!, span);
    }
    const ordered = [...spans.values()].sort((x, y) => x.start - y.start);
    expect(ordered.length).toBeGreaterThanOrEqual(2);
    for (let i = 1; i < ordered.length; i += 1)
      expect(ordered[i]!.start).toBeGreaterThan(ordered[i - 1]!.end);
    const { rows } = await pool.query(
      `SELECT status, diagnostic->>'code' AS code, count(*)::int AS n FROM svc.invocations
        WHERE concurrency_group = $1 GROUP BY 1, 2 ORDER BY 1, 2`,
      [group],
    );
    expect(rows.map((row) => row.status).sort()).toEqual(["cancelled", "completed"]);
    expect(rows.find((row) => row.status === "cancelled")?.code).toBe("superseded");
    expect(rows.find((row) => row.status === "completed")?.n).toBe(ordered.length);
    // no claim or dispatch of either worker failed on the way (two runs of a group would fail one)
    for (const worker of stack.workers)
      expect(
        worker.logs.filter((l) => l.event === "worker.fetch_failed" || l.event === "dispatch.failed"),
      ).toEqual([]);
    await second.stop();
  }, 90_000);
});
