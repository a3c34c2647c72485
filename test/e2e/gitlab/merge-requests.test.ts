import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lineage, waitFor, waitForTrigger } from "../../integration/worker/helpers.ts";
import { agentRunning } from "../outputs/sticky-bed.ts";
import {
  BASE,
  BOT,
  DEVELOPER,
  DIFF_V2,
  type GitlabBed,
  mergeRequestPayload,
  notePayload,
  PEOPLE_TOKENS,
  PROJECT,
  project,
  SECRETS,
  SHA1,
  SHA2,
  STRANGER,
  startGitlabBed,
} from "./gitlab-bed.ts";

/**
 * Merge requests end to end: GitLab's documented payloads through the real ingress and worker,
 * outputs published to the loopback GitLab REST v4 (fake-gitlab.ts) as `codehost.kind: gitlab`.
 */
const RESULT = `result:
  schema:
    type: object
    properties:
      review: { $ref: svc://schemas/codehost/review/v1 }
    required: [review]
`;

const REVIEW = `trigger:
  codehost: [merge_request.open]
targets: [review-agent]
instructions: Review the merge request.
${RESULT}outputs:
  review: { handler: codehost.review, resolve_outdated: true }
`;

const STICKY = `trigger:
  codehost:
    - events: [merge_request.reopen, merge_request.update]
targets: [sticky-agent]
concurrency: { group: pull_request, cancel_in_progress: true }
instructions: Review the merge request.
${RESULT}outputs:
  review: { handler: codehost.review, sticky: true, progress: true }
`;

const REPLY = `trigger:
  codehost: [merge_request.merge]
targets: [reply-agent]
instructions: Answer the discussion.
result:
  schema:
    type: object
    properties:
      reply: { $ref: svc://schemas/codehost/review-comment-reply/v1 }
    required: [reply]
outputs:
  reply: { handler: codehost.review-comment-reply }
`;

const CHAT = `trigger:
  codehost: [note]
targets: [chat-agent]
instructions: Answer the note.
`;

const COMMAND = `trigger:
  codehost:
    - command: review
targets: [command-agent]
instructions: Review on request.
result:
  schema:
    type: object
    properties:
      summary: { $ref: svc://schemas/codehost/comment/v1 }
outputs:
  summary: { handler: codehost.comment }
`;

describe("GitLab merge requests: reviews, sticky notes, commands", () => {
  let bed: GitlabBed;
  const notes = () => bed.gitlab.notes(PROJECT, 5);
  const byBot = () => notes().filter((note) => note.author.id === BOT.id);

  beforeAll(async () => {
    bed = await startGitlabBed({
      agents: ["review-agent", "sticky-agent", "command-agent", "reply-agent", "chat-agent"],
      pipelines: {
        "mr-review": REVIEW,
        "mr-sticky": STICKY,
        "mr-command": COMMAND,
        "mr-reply": REPLY,
        "mr-chat": CHAT,
      },
      // anyone may write a note on a public project's merge request; only members' are commands
      projects: [project({ visibility: "public" })],
    });
  });

  afterAll(async () => {
    await bed?.close();
  });

  it("a review lands as one positioned discussion per inline finding plus one summary note; an off-diff finding folds into it", async () => {
    const id = await bed.deliver(mergeRequestPayload({ sha: SHA1 }), "Merge Request Hook");
    await agentRunning(bed.pool, id);
    await bed.release("review-agent", {
      review: {
        event: "COMMENT",
        body: "Two findings.",
        comments: [
          { path: "src/app.js", line: 2, body: "`nm` says less than `name` did." },
          // a context line: GitLab positions it by its old and new numbers
          { path: "src/app.js", line: 20, body: "`a` is never reassigned." },
          { path: "src/app.js", line: 60, body: "This line is not in the diff." },
        ],
      },
    });
    const trigger = await waitForTrigger(bed.pool, id);
    expect(trigger).toMatchObject({ status: "completed", diagnostic: null });
    const positioned = bed.gitlab
      .discussions(PROJECT, 5)
      .filter((discussion) => discussion.notes[0]?.position);
    expect(positioned.map((d) => d.notes[0]!.position)).toMatchObject([
      { base_sha: BASE, start_sha: BASE, head_sha: SHA1, new_path: "src/app.js", new_line: 2 },
      { new_path: "src/app.js", new_line: 20, old_line: 20 },
    ]);
    for (const discussion of positioned) {
      expect(discussion.notes[0]!.author.id).toBe(BOT.id);
      expect(discussion.notes[0]!.body).toMatch(/<!-- svc:finding:[0-9a-f]{16} -->/);
    }
    const summaries = byBot().filter((note) => !note.position);
    expect(summaries).toHaveLength(1);
    expect(summaries[0]!.body).toContain("Two findings.");
    expect(summaries[0]!.body).toContain("src/app.js:60 — This line is not in the diff.");
    expect(summaries[0]!.body).toMatch(/<sub>mr-review 2\.0\.0 · trg_/);
    for (const request of bed.gitlab.requests) expect(request.token).toBe(SECRETS[1]);
  });

  it("a second push edits the sticky note (no second note) and cancels the superseded run", async () => {
    const first = await bed.deliver(
      mergeRequestPayload({ sha: SHA1, action: "reopen" }),
      "Merge Request Hook",
    );
    await agentRunning(bed.pool, first);
    const sticky = () => byBot().filter((note) => note.body.includes("<!-- svc:sticky:mr-sticky:review -->"));
    expect(sticky()).toHaveLength(1);
    expect(sticky()[0]!.body).toContain(`⏳ **mr-sticky** is running on commit ${SHA1}`);
    const noteId = sticky()[0]!.id;

    bed.gitlab.push(PROJECT, 5, {
      head_sha: SHA2,
      diffs: [{ old_path: "src/app.js", new_path: "src/app.js", diff: DIFF_V2 }],
    });
    const second = await bed.deliver(
      mergeRequestPayload({ sha: SHA2, action: "update", oldrev: SHA1 }),
      "Merge Request Hook",
    );
    const cancelled = await waitForTrigger(bed.pool, first);
    const { invocations } = await lineage(bed.pool, first);
    expect(invocations[0]).toMatchObject({ status: "cancelled" });
    expect(cancelled.status).not.toBe("running");
    await agentRunning(bed.pool, second);
    await bed.release("sticky-agent", { review: { event: "COMMENT", body: "Reviewed the new head." } });
    expect((await waitForTrigger(bed.pool, second)).status).toBe("completed");
    await waitFor(
      async () => sticky()[0]?.body.includes("Reviewed the new head.") === true,
      "the sticky result",
    );
    expect(sticky()).toHaveLength(1);
    expect(sticky()[0]!.id).toBe(noteId);
    // the progress note, then the result: one POST, every later write a PUT of the same note
    const posts = bed.gitlab.requests.filter(
      (r) =>
        r.method === "POST" &&
        /merge_requests\/5\/notes$/.test(r.path) &&
        JSON.stringify(r.body).includes("svc:sticky:mr-sticky:review"),
    );
    expect(posts).toHaveLength(1);
    expect(bed.gitlab.requests.some((r) => r.method === "PUT" && r.path.endsWith(`/notes/${noteId}`))).toBe(
      true,
    );
  });

  it("after a push: a finding still standing is not posted again, svc's discussion whose line changed is resolved, a position GitLab refuses moves to the summary, APPROVE approves", async () => {
    // the sticky test pushed DIFF_V2: line 2 changed, line 20 did not
    const positioned = () =>
      bed.gitlab.discussions(PROJECT, 5).filter((discussion) => discussion.notes[0]?.position);
    const before = positioned();
    expect(before).toHaveLength(2);
    bed.gitlab.refusePositionOnce("POST", "/merge_requests/5/discussions");
    const id = await bed.deliver(mergeRequestPayload({ sha: SHA2 }), "Merge Request Hook");
    await agentRunning(bed.pool, id);
    await bed.release("review-agent", {
      review: {
        event: "APPROVE",
        body: "Fine once this is addressed.",
        comments: [
          { path: "src/app.js", line: 20, body: "`a` is never reassigned." },
          { path: "src/app.js", line: 2, body: "`count` of what?" },
        ],
      },
    });
    expect(await waitForTrigger(bed.pool, id)).toMatchObject({ status: "completed", diagnostic: null });
    const after = positioned();
    // nothing new was positioned: the standing one was left out, the new one refused by GitLab
    expect(after).toHaveLength(2);
    const line = (n: number) => after.find((d) => d.notes[0]!.position?.new_line === n)!;
    expect(line(2).notes[0]!.resolved).toBe(true);
    expect(line(20).notes[0]!.resolved).toBe(false);
    const summary = byBot().filter((note) => !note.position && note.body.startsWith("Fine once"));
    expect(summary).toHaveLength(1);
    expect(summary[0]!.body).toContain("src/app.js:2 — `count` of what?");
    expect(summary[0]!.body).toContain("1 finding already reported");
    expect(bed.gitlab.approvals(PROJECT, 5)).toEqual([BOT.username]);
  });

  it("a reply lands in the discussion holding the note it answers, once", async () => {
    const discussion = bed.gitlab
      .discussions(PROJECT, 5)
      .find((d) => d.notes[0]?.position?.new_line === 20 && !d.notes[0]?.resolved)!;
    const answered = discussion.notes[0]!.id;
    const id = await bed.deliver(mergeRequestPayload({ sha: SHA2, action: "merge" }), "Merge Request Hook");
    await agentRunning(bed.pool, id);
    await bed.release("reply-agent", { reply: { in_reply_to: answered, body: "Fixed in the next commit." } });
    expect(await waitForTrigger(bed.pool, id)).toMatchObject({ status: "completed", diagnostic: null });
    const thread = bed.gitlab.discussions(PROJECT, 5).find((d) => d.id === discussion.id)!;
    expect(thread.notes).toHaveLength(2);
    expect(thread.notes[1]!.author.id).toBe(BOT.id);
    expect(thread.notes[1]!.body).toMatch(/^Fixed in the next commit\.\n\n---\n<sub>mr-reply 2\.0\.0/);
  });

  it("a title edit (merge_request.update without oldrev) fires no pipeline that reviews code on merge_request", async () => {
    const id = await bed.deliver(mergeRequestPayload({ sha: SHA2, action: "update" }), "Merge Request Hook");
    // mr-sticky names merge_request.update itself, so it still answers
    await agentRunning(bed.pool, id);
    const { workloads } = await lineage(bed.pool, id);
    expect(workloads.map((w) => w.pipeline)).toEqual(["mr-sticky"]);
    await bed.release("sticky-agent", { review: { event: "COMMENT", body: "Nothing new." } });
    await waitForTrigger(bed.pool, id);
  });

  it("`@svc-bot review` by a developer fires and is answered with 👀; by a non-member it is refused with 👎", async () => {
    const text = "@svc-bot review please";
    const asDeveloper = await bed.write(PEOPLE_TOKENS.dev, text);
    const taken = await bed.deliver(notePayload(text, DEVELOPER, asDeveloper), "Note Hook");
    await agentRunning(bed.pool, taken);
    await bed.release("command-agent", { summary: { body: "Reviewed on request." } });
    expect(await waitForTrigger(bed.pool, taken)).toMatchObject({ status: "completed" });
    const { workloads } = await lineage(bed.pool, taken);
    expect(workloads.map((w) => w.pipeline)).toEqual(["mr-command"]);
    expect(byBot().some((note) => note.body.startsWith("Reviewed on request."))).toBe(true);

    const asStranger = await bed.write(PEOPLE_TOKENS.stranger, text);
    const refused = await bed.deliver(notePayload(text, STRANGER, asStranger), "Note Hook");
    expect(await waitForTrigger(bed.pool, refused)).toMatchObject({
      status: "completed",
      diagnostic: { code: "command_not_allowed" },
    });
    expect((await lineage(bed.pool, refused)).workloads).toEqual([]);
    await waitFor(async () => bed.gitlab.awards(PROJECT, 5).length >= 2, "the two award emoji");
    expect(bed.gitlab.awards(PROJECT, 5)).toEqual([
      { note_id: asDeveloper, name: "eyes", user: BOT.username },
      { note_id: asStranger, name: "thumbsdown", user: BOT.username },
    ]);
    // who wrote each event was asked of GitLab's members API (once a minute per user)
    const asked = bed.gitlab.requests.filter((r) => r.path.includes("/members/all/")).map((r) => r.path);
    expect(asked.some((path) => path.endsWith(`/members/all/${DEVELOPER.id}`))).toBe(true);
    expect(asked.some((path) => path.endsWith(`/members/all/${STRANGER.id}`))).toBe(true);
  });

  it("`@svc-bot pause` by a developer stops the merge request's automatic runs until `@svc-bot resume`", async () => {
    const pause = await bed.write(PEOPLE_TOKENS.dev, "@svc-bot pause");
    expect(
      await waitForTrigger(
        bed.pool,
        await bed.deliver(notePayload("@svc-bot pause", DEVELOPER, pause), "Note Hook"),
      ),
    ).toMatchObject({ status: "completed", diagnostic: { code: "paused" } });
    const paused = await bed.deliver(
      mergeRequestPayload({ sha: SHA2, action: "reopen" }),
      "Merge Request Hook",
    );
    expect(await waitForTrigger(bed.pool, paused)).toMatchObject({
      status: "completed",
      diagnostic: { code: "paused", message: expect.stringContaining(`${PROJECT}#5 is paused`) },
    });
    const resume = await bed.write(PEOPLE_TOKENS.dev, "@svc-bot resume");
    expect(
      await waitForTrigger(
        bed.pool,
        await bed.deliver(notePayload("@svc-bot resume", DEVELOPER, resume), "Note Hook"),
      ),
    ).toMatchObject({ status: "completed", diagnostic: { code: "resumed" } });
  });

  it("a note whose answer was lost is found (svc's own, by its marker) and not posted twice", async () => {
    const text = "@svc-bot review again";
    const note = await bed.write(PEOPLE_TOKENS.dev, text);
    bed.gitlab.loseAnswerOnce("POST", "/merge_requests/5/notes");
    const id = await bed.deliver(notePayload(text, DEVELOPER, note), "Note Hook");
    await agentRunning(bed.pool, id);
    await bed.release("command-agent", { summary: { body: "Reviewed once more." } });
    expect(await waitForTrigger(bed.pool, id)).toMatchObject({ status: "completed", diagnostic: null });
    expect(byBot().filter((entry) => entry.body.startsWith("Reviewed once more."))).toHaveLength(1);
    const { rows } = await bed.pool.query(
      `SELECT d.status, d.attempts FROM svc.output_deliveries d JOIN svc.invocations i ON i.id = d.invocation_id
         JOIN svc.workloads w ON w.id = i.workload_id WHERE w.trigger_id = $1`,
      [id],
    );
    expect(rows).toEqual([{ status: "sent", attempts: 1 }]);
  });

  it("a note svc's own GitLab user wrote is not answered (no loop on its own output); a developer's is", async () => {
    const own = await bed.deliver(notePayload("Reviewed once more.", BOT), "Note Hook");
    expect(await waitForTrigger(bed.pool, own)).toMatchObject({ status: "completed" });
    const { workloads, invocations, tasks } = await lineage(bed.pool, own);
    expect(workloads.map((w) => w.pipeline)).toEqual(["mr-chat"]);
    expect(invocations[0]).toMatchObject({ status: "completed" });
    expect(tasks.filter((t) => t.kind === "agent")).toEqual([]);

    const theirs = await bed.deliver(notePayload("What about tests?", DEVELOPER), "Note Hook");
    await agentRunning(bed.pool, theirs);
    await bed.release("chat-agent", {});
    expect(await waitForTrigger(bed.pool, theirs)).toMatchObject({ status: "completed" });
  });
});
