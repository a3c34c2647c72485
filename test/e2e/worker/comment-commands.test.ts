import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lineage, waitFor, waitForTrigger } from "../../integration/worker/helpers.ts";
import { type CommandBed, MEMBER_TOKEN, STRANGER_TOKEN, startCommandBed } from "./command-bed.ts";

/**
 * Comment commands through the real ingress and worker: signed `issue_comment` deliveries, the
 * command pipeline's run and its COMMAND_ARGS, pause and resume recorded in Postgres, and the
 * reactions svc answers with, posted to the loopback GitHub.
 */
const AUTO = "trigger:\n  codehost: [pull_request]\n";
const ON_REQUEST = "trigger:\n  codehost:\n    - command: review\n";

const member = { token: MEMBER_TOKEN, association: "MEMBER" } as const;
const stranger = { token: STRANGER_TOKEN, association: "NONE" } as const;

describe("comment commands: @svc <word>, pause and resume (real ingress, worker, loopback GitHub)", () => {
  let bed: CommandBed;

  beforeAll(async () => {
    bed = await startCommandBed({ pipelines: { "auto-review": AUTO, "review-on-request": ON_REQUEST } });
  });

  afterAll(async () => {
    await bed?.close();
  });

  /** The reactions svc's identity posted on a comment, once there are `count`. */
  async function reactions(commentId: number, count: number): Promise<string[]> {
    return waitFor(async () => {
      const list = (bed.github.reactions.get(commentId) ?? []).filter((r) => r.user === "svc-bot");
      return list.length >= count ? list.map((r) => r.content) : undefined;
    }, `${count} reaction(s) on comment ${commentId}`);
  }

  it("a member's `@svc review please` runs the command pipeline with COMMAND_ARGS=please, and svc reacts 👀", async () => {
    const { trigger, commentId } = await bed.comment(11, "@svc review please\nthanks!", member);
    expect((await waitForTrigger(bed.pool, trigger)).status).toBe("completed");
    const { workloads, invocations } = await lineage(bed.pool, trigger);
    expect(workloads.map((w) => w.pipeline)).toEqual(["review-on-request"]);
    expect(invocations[0].result).toEqual({
      command_args: "please",
      prompt_command_args: "please",
      event: "issue_comment.created",
    });
    expect(await reactions(commentId, 1)).toEqual(["eyes"]);
  });

  it("a plain comment, or one naming the command later in the text, runs nothing and gets no reaction", async () => {
    for (const body of ["looks good to me", "could @svc review this?", "@svc-bot review"]) {
      const { trigger, commentId } = await bed.comment(12, body, member);
      const done = await waitForTrigger(bed.pool, trigger);
      expect(done.status).toBe("completed");
      expect(done.diagnostic.code).toBe("no_matching_pipeline");
      expect((await lineage(bed.pool, trigger)).workloads).toEqual([]);
      expect(bed.github.reactions.get(commentId)).toBeUndefined();
    }
  });

  it("an outsider's `@svc review` starts no run: the diagnostic names the gate, svc reacts 👎", async () => {
    const { trigger, commentId } = await bed.comment(13, "@svc review $(id)", stranger);
    const done = await waitForTrigger(bed.pool, trigger);
    expect(done.status).toBe("completed");
    expect(done.diagnostic.code).toBe("command_not_allowed");
    expect(done.diagnostic.message).toContain("codehost.commands_from");
    expect((await lineage(bed.pool, trigger)).workloads).toEqual([]);
    expect(await reactions(commentId, 1)).toEqual(["-1"]);
  });

  it("`@svc pause` stops the next push's run (completed, paused); a command still runs; `@svc resume` restores it", async () => {
    const before = await bed.pullRequest(14, "synchronize", { association: "MEMBER" });
    expect((await waitForTrigger(bed.pool, before)).status).toBe("completed");
    expect((await lineage(bed.pool, before)).workloads.map((w) => w.pipeline)).toEqual(["auto-review"]);

    const pause = await bed.comment(14, "@svc pause", member);
    const paused = await waitForTrigger(bed.pool, pause.trigger);
    expect([paused.status, paused.diagnostic.code]).toEqual(["completed", "paused"]);
    expect(await reactions(pause.commentId, 1)).toEqual(["eyes"]);
    const { rows } = await bed.pool.query("SELECT repo, number, paused_by FROM svc.paused_pull_requests");
    expect(rows).toEqual([{ repo: "Codertocat/Hello-World", number: 14, paused_by: "octo-member" }]);

    const push = await bed.pullRequest(14, "synchronize", { association: "MEMBER" });
    const skipped = await waitForTrigger(bed.pool, push);
    expect([skipped.status, skipped.diagnostic.code]).toEqual(["completed", "paused"]);
    expect((await lineage(bed.pool, push)).workloads).toEqual([]);
    // another pull request is not paused
    const other = await bed.pullRequest(15, "synchronize", { association: "MEMBER" });
    expect((await waitForTrigger(bed.pool, other)).status).toBe("completed");
    expect((await lineage(bed.pool, other)).workloads).toHaveLength(1);

    // a paused pull request can still be reviewed on request
    const asked = await bed.comment(14, "@svc review", member);
    expect((await waitForTrigger(bed.pool, asked.trigger)).status).toBe("completed");
    expect((await lineage(bed.pool, asked.trigger)).invocations[0].result).toEqual({
      command_args: "",
      prompt_command_args: "",
      event: "issue_comment.created",
    });

    // an outsider cannot lift the pause
    const theirs = await bed.comment(14, "@svc resume", stranger);
    expect((await waitForTrigger(bed.pool, theirs.trigger)).diagnostic.code).toBe("command_not_allowed");
    expect(await reactions(theirs.commentId, 1)).toEqual(["-1"]);
    expect((await bed.pool.query("SELECT 1 FROM svc.paused_pull_requests")).rowCount).toBe(1);

    const resume = await bed.comment(14, "@svc resume", member);
    const resumed = await waitForTrigger(bed.pool, resume.trigger);
    expect([resumed.status, resumed.diagnostic.code]).toEqual(["completed", "resumed"]);
    expect(await reactions(resume.commentId, 1)).toEqual(["eyes"]);

    const after = await bed.pullRequest(14, "synchronize", { association: "MEMBER" });
    expect((await waitForTrigger(bed.pool, after)).status).toBe("completed");
    const automatic = await lineage(bed.pool, after);
    expect(automatic.workloads.map((w) => w.pipeline)).toEqual(["auto-review"]);
    // a run no command fired has no COMMAND_ARGS, in its environment or its prompt
    expect(automatic.invocations[0].result).toEqual({
      command_args: null,
      prompt_command_args: null,
      event: "pull_request.synchronize",
    });
  });
});
