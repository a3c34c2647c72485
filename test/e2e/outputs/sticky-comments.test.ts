import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lineage, waitFor, waitForTrigger } from "../../integration/worker/helpers.ts";
import {
  agentRunning,
  FILES_V1,
  FILES_V2,
  PUBLIC_URL,
  REPO,
  SECRETS,
  type StickyBed,
  startStickyBed,
} from "./sticky-bed.ts";

const SUMMARY_PIPELINE = `trigger:
  webhook: [summary-hook]
targets: [summary-agent]
instructions: Summarise the pull request.
result:
  schema:
    type: object
    properties:
      summary: { $ref: svc://schemas/codehost/comment/v1 }
outputs:
  summary: { handler: codehost.comment, sticky: true, progress: true }
`;

const REVIEW_PIPELINE = `trigger:
  webhook: [review-hook]
targets: [review-agent]
instructions: Review the pull request.
result:
  schema:
    type: object
    properties:
      review: { $ref: svc://schemas/codehost/review/v1 }
    required: [review]
outputs:
  review: { handler: codehost.review, resolve_outdated: true }
`;

const VERDICT_PIPELINE = `trigger:
  webhook: [verdict-hook]
targets: [verdict-agent]
instructions: Review the pull request.
result:
  schema:
    type: object
    properties:
      review: { $ref: svc://schemas/codehost/review/v1 }
    required: [review]
outputs:
  review: { handler: codehost.review, sticky: true, progress: true }
`;

const SHA = ["1111111", "2222222", "3333333", "4444444"].map((prefix) =>
  `${prefix}${"abcdef0".repeat(5)}`.slice(0, 40),
);

describe("sticky comments: one comment per pull request, kept up to date; no finding twice", () => {
  let bed: StickyBed;
  const summary = () => bed.github.comments.get(`${REPO}#7`) ?? [];
  const requests = (method: string, suffix: string) =>
    bed.github.requests.filter((r) => r.method === method && r.path.endsWith(suffix));

  beforeAll(async () => {
    bed = await startStickyBed({
      agents: ["summary-agent", "review-agent", "verdict-agent"],
      pipelines: {
        "pr-summary": SUMMARY_PIPELINE,
        "pr-review": REVIEW_PIPELINE,
        "pr-verdict": VERDICT_PIPELINE,
      },
      hooks: ["summary-hook", "review-hook", "verdict-hook"],
    });
  });

  afterAll(async () => {
    await bed?.close();
  });

  async function invocationOf(triggerId: string): Promise<string> {
    const { invocations } = await lineage(bed.pool, triggerId);
    return invocations[0].id as string;
  }

  it("the progress comment stands while the agent runs, then the same comment holds the result (one POST, then PATCHes)", async () => {
    const id = await bed.fire("summary-hook", 7, SHA[0]!);
    await agentRunning(bed.pool, id);
    const invocation = await invocationOf(id);
    expect(summary()).toHaveLength(1);
    const [comment] = summary();
    expect(comment!.user.login).toBe("svc-bot");
    expect(comment!.body).toContain(
      `⏳ **pr-summary** is running on commit ${SHA[0]} · [trace](${PUBLIC_URL}/ui/trace/${invocation})`,
    );
    const running = await bed.pool.query("SELECT status FROM svc.triggers WHERE id = $1", [id]);
    expect(running.rows[0].status).toBe("running");

    await bed.release("summary-agent", { summary: { body: "Looks good: 2 files reviewed." } });
    expect((await waitForTrigger(bed.pool, id)).status).toBe("completed");
    expect(summary()).toHaveLength(1);
    expect(summary()[0]!.id).toBe(comment!.id);
    expect(summary()[0]!.body).toMatch(
      /^Looks good: 2 files reviewed\.\n\n---\n<sub>pr-summary 3\.1\.0 · trg_/,
    );
    expect(summary()[0]!.body).not.toContain("is running");
    expect(summary()[0]!.body).toContain("<!-- svc:sticky:pr-summary:summary -->");
    expect(requests("POST", "/issues/7/comments")).toHaveLength(1);
    expect(requests("PATCH", `/issues/comments/${comment!.id}`)).toHaveLength(1);
    const { rows } = await bed.pool.query("SELECT * FROM svc.sticky_comments");
    expect(rows).toMatchObject([
      {
        pipeline: "pr-summary",
        repo: REPO,
        number: 7,
        output_key: "summary",
        comment_id: String(comment!.id),
        invocation_id: invocation,
        state: "result",
        sha: SHA[0],
      },
    ]);
  });

  it("a second run on the same pull request edits the same comment: in progress on its commit, then its result", async () => {
    const [comment] = summary();
    const id = await bed.fire("summary-hook", 7, SHA[1]!);
    await agentRunning(bed.pool, id);
    expect(summary()).toHaveLength(1);
    expect(summary()[0]!.body).toContain(`is running on commit ${SHA[1]}`);
    await bed.release("summary-agent", { summary: { body: "Still good after the push." } });
    expect((await waitForTrigger(bed.pool, id)).status).toBe("completed");
    expect(summary()).toHaveLength(1);
    expect(summary()[0]!.body).toContain("Still good after the push.");
    expect(requests("POST", "/issues/7/comments")).toHaveLength(1);
    expect(requests("PATCH", `/issues/comments/${comment!.id}`)).toHaveLength(3);
  });

  it("an edit whose answer is lost (applied, connection dropped) is retried as an edit, never as a second comment", async () => {
    const [comment] = summary();
    const id = await bed.fire("summary-hook", 7, SHA[2]!);
    await agentRunning(bed.pool, id);
    bed.github.dropAnswerOnce("PATCH", `/issues/comments/${comment!.id}`);
    await bed.release("summary-agent", { summary: { body: "Third time." } });
    expect((await waitForTrigger(bed.pool, id)).status).toBe("completed");
    expect(summary()).toHaveLength(1);
    expect(summary()[0]!.body).toContain("Third time.");
    expect(requests("POST", "/issues/7/comments")).toHaveLength(1);
    // progress, the edit whose answer was lost, its retry
    expect(requests("PATCH", `/issues/comments/${comment!.id}`)).toHaveLength(6);
    const invocation = await invocationOf(id);
    const { rows } = await bed.pool.query("SELECT * FROM svc.output_deliveries WHERE invocation_id = $1", [
      invocation,
    ]);
    expect(rows).toMatchObject([{ output_key: "summary", status: "sent", attempts: 2 }]);
    await bed.worker.waitForLog(
      (l) => l.event === "output.retrying" && l.invocation === invocation && l.status === "network",
      "the lost edit retried",
    );
  });

  it("a failing run leaves one line in the comment: failed, with its diagnostic code and message", async () => {
    const id = await bed.fire("summary-hook", 7, SHA[3]!);
    await agentRunning(bed.pool, id);
    await bed.release("summary-agent", "FAIL");
    const trigger = await waitForTrigger(bed.pool, id);
    expect(trigger).toMatchObject({ status: "error", diagnostic: { code: "agent_failed" } });
    const { invocations } = await lineage(bed.pool, id);
    const message = invocations[0].diagnostic.message as string;
    expect(message).toContain("exited with 3");
    await waitFor(async () => summary()[0]!.body.includes("failed"), "the failure line");
    expect(summary()).toHaveLength(1);
    const body = summary()[0]!.body;
    expect(body).toContain(
      `❌ **pr-summary** failed on commit ${SHA[3]}: \`agent_failed\` \`${message}\` · [trace](${PUBLIC_URL}/ui/trace/${invocations[0].id})`,
    );
    expect(body).not.toContain("is running");
    expect(requests("POST", "/issues/7/comments")).toHaveLength(1);
    const everything = [...summary().map((c) => c.body), ...bed.worker.output].join("\n");
    for (const secret of SECRETS) expect(everything).not.toContain(secret);
  });

  it("a cancelled run leaves one line in the comment: cancelled, with its diagnostic code and message", async () => {
    const sha = SHA[2]!;
    const id = await bed.fire("summary-hook", 7, sha);
    await agentRunning(bed.pool, id);
    const invocation = await invocationOf(id);
    const cancel = await fetch(`${bed.url}/invocations/${invocation}/cancel`, { method: "POST" });
    expect(cancel.status).toBe(200);
    await waitFor(async () => summary()[0]!.body.includes("was cancelled"), "the cancellation line");
    const { invocations } = await lineage(bed.pool, id);
    expect(invocations[0]).toMatchObject({ status: "cancelled", diagnostic: { code: "cancelled" } });
    expect(summary()).toHaveLength(1);
    expect(summary()[0]!.body).toContain(
      `⏹ **pr-summary** was cancelled on commit ${sha}: \`cancelled\` \`${invocations[0].diagnostic.message}\``,
    );
    expect(requests("POST", "/issues/7/comments")).toHaveLength(1);
  });

  it("a finding still standing is not posted again and is counted; resolve_outdated resolves svc's thread whose line changed", async () => {
    const pull = `${REPO}#8`;
    bed.github.files.set(pull, FILES_V1);
    const finding = { path: "src/app.js", line: 21, body: "b() can throw here" };
    const renamed = { path: "src/app.js", line: 2, body: "nm is a poor name" };
    await bed.release("review-agent", {
      review: { event: "COMMENT", body: "Two things.", comments: [finding, renamed] },
    });
    const first = await bed.fire("review-hook", 8, SHA[0]!);
    expect((await waitForTrigger(bed.pool, first)).status).toBe("completed");
    const posted = bed.github.reviewComments.get(pull)!;
    expect(posted).toHaveLength(2);
    for (const comment of posted) expect(comment.body).toMatch(/\n\n<!-- svc:finding:[0-9a-f]{16} -->$/);
    const [findingThread, renamedThread] = bed.github.threads.filter((t) => t.pull === pull);

    // a push changes the line of the second finding only
    bed.github.pushFiles(pull, FILES_V2);
    const fresh = { path: "src/app.js", line: 2, body: "count is never read" };
    await bed.release("review-agent", {
      review: { event: "REQUEST_CHANGES", body: "One new thing.", comments: [finding, fresh] },
    });
    const second = await bed.fire("review-hook", 8, SHA[1]!);
    expect((await waitForTrigger(bed.pool, second)).status).toBe("completed");
    const reviews = bed.github.reviews.get(pull)!;
    expect(reviews).toHaveLength(2);
    expect(reviews[1]!.body).toContain("One new thing.\n\n1 finding already reported");
    expect((reviews[1]!.comments as { body: string }[]).map((c) => c.body.split("\n")[0])).toEqual([
      "count is never read",
    ]);
    expect(bed.github.reviewComments.get(pull)).toHaveLength(3);
    expect(renamedThread).toMatchObject({ isOutdated: true, isResolved: true });
    expect(findingThread).toMatchObject({ isOutdated: false, isResolved: false });
    const resolutions = bed.github.requests.filter(
      (r) =>
        r.path === "/graphql" && String((r.body as { query: string }).query).includes("resolveReviewThread"),
    );
    expect(
      resolutions.map((r) => (r.body as { variables: { threadId: string } }).variables.threadId),
    ).toEqual([renamedThread!.id]);
  });

  it("a sticky review: its summary in the one comment (in progress, then the result), the review only carrying its findings", async () => {
    const pull = `${REPO}#9`;
    bed.github.files.set(pull, FILES_V1);
    const id = await bed.fire("verdict-hook", 9, SHA[0]!);
    await agentRunning(bed.pool, id);
    const comments = () => bed.github.comments.get(pull) ?? [];
    expect(comments()).toHaveLength(1);
    expect(comments()[0]!.body).toContain(`⏳ **pr-verdict** is running on commit ${SHA[0]}`);
    await bed.release("verdict-agent", {
      review: {
        event: "COMMENT",
        body: "Summary: one risk.",
        comments: [{ path: "src/app.js", line: 21, body: "b() can throw" }],
      },
    });
    expect((await waitForTrigger(bed.pool, id)).status).toBe("completed");
    expect(comments()).toHaveLength(1);
    expect(comments()[0]!.body).toMatch(/^Summary: one risk\.\n\n---/);
    const reviews = bed.github.reviews.get(pull)!;
    expect(reviews).toHaveLength(1);
    expect(reviews[0]!.body).toMatch(new RegExp(`^Summary: ${comments()[0]!.html_url}`));

    // the same finding again, nothing new: the comment is edited, no second review
    const again = await bed.fire("verdict-hook", 9, SHA[1]!);
    await agentRunning(bed.pool, again);
    await bed.release("verdict-agent", {
      review: {
        event: "COMMENT",
        body: "Summary: unchanged.",
        comments: [{ path: "src/app.js", line: 21, body: "b() can throw" }],
      },
    });
    expect((await waitForTrigger(bed.pool, again)).status).toBe("completed");
    expect(comments()).toHaveLength(1);
    expect(comments()[0]!.body).toContain("Summary: unchanged.\n\n1 finding already reported");
    expect(bed.github.reviews.get(pull)).toHaveLength(1);
  });
});
