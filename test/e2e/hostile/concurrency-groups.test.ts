import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor, waitForTrigger } from "../../integration/worker/helpers.ts";
import {
  CODEHOST_TOKEN,
  GITHUB_SECRET,
  type GroupStack,
  openGroupStack,
  processAlive,
  REPOS,
  reviewBodies,
} from "../worker/group-fixture.ts";

/**
 * Concurrency groups and incremental reviews against a pull request's author, who controls when
 * and what they push (force pushes included) and which pull requests they open. Real ingress,
 * worker, git repository and loopback code host (test/e2e/worker/group-fixture.ts). Each attack
 * checks that nothing leaked (no secret in any log), nothing fired that should not have (no
 * publication, no process), and how the runs ended.
 */
describe("hostile: a pull request's author against concurrency groups", () => {
  let stack: GroupStack;

  beforeAll(async () => {
    stack = await openGroupStack();
    await stack.startWorker();
  });

  afterAll(async () => {
    if (stack) {
      const logs = [...stack.ingress.output, ...stack.workers.flatMap((worker) => worker.output)].join("\n");
      for (const secret of [GITHUB_SECRET, CODEHOST_TOKEN]) expect(logs).not.toContain(secret);
    }
    await stack?.close();
  });

  const setupLog = async () =>
    (await readFile(join(stack.dir, "setup.log"), "utf8").catch(() => "")).split("\n").filter(Boolean);
  const deliveriesOf = async (invocation: unknown) =>
    (
      await stack.pool.query("SELECT output_key FROM svc.output_deliveries WHERE invocation_id = $1", [
        invocation,
      ])
    ).rows;

  it("a stale review of an older push never lands after the author pushed again", async () => {
    const repo = REPOS.cancelling;
    const benign = stack.commit("h-51", "benign");
    const malicious = stack.commit("h-51", "malicious");
    await stack.hold(benign);
    const first = await stack.push(repo, 51, benign, "opened");
    const firstRun = await stack.runOf(first, (i) => i.status === "running", "the benign review to run");
    const pid = await stack.agentPid(firstRun.runDir);
    const second = await stack.push(repo, 51, malicious);
    await stack.runOf(second, () => true, "the newer push to be dispatched");
    // the stale review's agent finishes now: were it still running, it would publish its verdict
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    await stack.release(benign);
    for (const trigger of [first, second])
      expect((await waitForTrigger(stack.pool, trigger)).status).toBe("completed");
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(reviewBodies(stack.github, repo, 51)).toEqual([`reviewed ${malicious} since`]);
    expect(await deliveriesOf(firstRun.invocation.id)).toEqual([]);
    expect((await stack.runOf(first)).invocation).toMatchObject({
      status: "cancelled",
      diagnostic: { code: "superseded" },
    });
    await waitFor(async () => !processAlive(pid), "the stale agent to have been killed");
  });

  it("a flood of pushes costs one run in flight and one waiting, not one run each", async () => {
    const repo = REPOS.waiting;
    const shas = Array.from({ length: 10 }, (_, n) => stack.commit("h-52", `flood ${n}`));
    await stack.hold(shas[0]!);
    const triggers = [await stack.push(repo, 52, shas[0]!, "opened")];
    await stack.runOf(triggers[0]!, (i) => i.status === "running", "the first review to run");
    triggers.push(...(await Promise.all(shas.slice(1).map((sha) => stack.push(repo, 52, sha)))));
    // every push is dispatched: all but one of the nine behind the running one are superseded at once
    const states = await waitFor(async () => {
      const { rows } = await stack.pool.query<{ status: string; code: string | null; n: number }>(
        `SELECT status, diagnostic->>'code' AS code, count(*)::int AS n FROM svc.invocations
          WHERE concurrency_group = $1 GROUP BY 1, 2 ORDER BY 1`,
        [`pull_request:waiting:${repo}#52`],
      );
      return rows.reduce((sum, row) => sum + row.n, 0) === 10 ? rows : undefined;
    }, "every push to be dispatched");
    expect(states).toEqual([
      { status: "cancelled", code: "superseded", n: 8 },
      { status: "queued", code: null, n: 1 },
      { status: "running", code: null, n: 1 },
    ]);
    await stack.release(shas[0]!);
    for (const trigger of triggers)
      expect((await waitForTrigger(stack.pool, trigger)).status).toBe("completed");
    // ten pushes, two processes, two reviews
    expect((await setupLog()).filter((sha) => shas.includes(sha))).toHaveLength(2);
    expect(reviewBodies(stack.github, repo, 52)).toHaveLength(2);
  });

  it("a force push never narrows the next review to a diff against a head it does not contain", async () => {
    const repo = REPOS.cancelling;
    const reviewed = stack.commit("h-53", "reviewed and approved");
    await waitForTrigger(stack.pool, await stack.push(repo, 53, reviewed, "opened"));
    // the author keeps the reviewed commit reachable on another branch and rewrites the pull
    // request's branch from main: the reviewed head is in the clone but not an ancestor
    stack.commit("h-53-keep", "kept", reviewed);
    const rewritten = stack.commit("h-53", "rewritten from scratch", "main");
    const forced = await stack.push(repo, 53, rewritten);
    expect((await waitForTrigger(stack.pool, forced)).status).toBe("completed");
    const run = await stack.runOf(forced);
    expect(await readFile(join(run.runDir, "previous.txt"), "utf8")).toBe("");
    expect(await readFile(join(run.runDir, "prompt.txt"), "utf8")).toContain("review everything");
    expect(reviewBodies(stack.github, repo, 53)).toEqual([
      `reviewed ${reviewed} since`,
      `reviewed ${rewritten} since`,
    ]);
  });

  it("a stranger's own pull request never cancels or delays the review of another one", async () => {
    const repo = REPOS.cancelling;
    const victim = stack.commit("h-54", "victim's change");
    const stranger = stack.commit("h-55", "stranger's change");
    await stack.hold(victim);
    const victimTrigger = await stack.push(repo, 54, victim, "opened");
    const victimRun = await stack.runOf(
      victimTrigger,
      (i) => i.status === "running",
      "the victim's review to run",
    );
    const strangerTrigger = await stack.push(repo, 55, stranger, "opened");
    expect((await waitForTrigger(stack.pool, strangerTrigger)).status).toBe("completed");
    // the stranger's review ran beside the victim's, which still runs, untouched
    expect((await stack.runOf(victimTrigger)).invocation).toMatchObject({
      status: "running",
      diagnostic: null,
    });
    await stack.release(victim);
    expect((await waitForTrigger(stack.pool, victimTrigger)).status).toBe("completed");
    expect((await stack.runOf(victimTrigger)).invocation.status).toBe("completed");
    expect(reviewBodies(stack.github, repo, 54)).toEqual([`reviewed ${victim} since`]);
    expect(await deliveriesOf(victimRun.invocation.id)).toHaveLength(1);
  });
});
