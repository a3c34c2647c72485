import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lineage } from "../../integration/worker/helpers.ts";
import { testGit } from "../../support/git.ts";
import { waitFor } from "../../support/wait-for.ts";
import type { HostedRepo } from "./fake-github.ts";
import { agentRunning, REPO, type StickyBed, startStickyBed } from "./sticky-bed.ts";

/**
 * A rehearsal (`svc doctor --deep --fire`, POST /repos/:owner/:name/pulls/:number/rehearse) beside
 * a live review of the same pull request, on a real ingress and worker: the held run neither
 * cancels the live one (cancel_in_progress) nor waits for it, writes nothing to the pull request,
 * and leaves what it would have posted as its artifact.
 */
const PIPELINE = `trigger:
  webhook: [review-hook]
  codehost: [pull_request.synchronize]
targets: [review-agent]
instructions: Review the pull request.
concurrency: { group: pull_request, cancel_in_progress: true }
result:
  schema:
    type: object
    properties:
      review: { $ref: svc://schemas/codehost/review/v1 }
    required: [review]
outputs:
  review: { handler: codehost.review, sticky: true, progress: true }
`;
const RESULT = {
  review: {
    event: "COMMENT",
    body: "Naming: one finding.",
    comments: [{ path: "src/app.js", line: 2, body: "`nm` says less than `name`." }],
  },
};
const PATCH = '@@ -1,3 +1,3 @@\n import x from "x";\n-let name = 1;\n+let nm = 1;\n export {};';

describe("a run whose outputs are held back, beside the live review of its pull request", () => {
  let bed: StickyBed;
  let parent: string;
  let head: string;
  const hosted: HostedRepo = { repository: { full_name: REPO, default_branch: "main" }, pulls: [] };

  beforeAll(async () => {
    // the repository the runs check out: a local mirror holding the pull request's head
    parent = await mkdtemp(join(tmpdir(), "svc-held-outputs-"));
    const git = testGit(parent);
    const work = join(parent, "work");
    git(["init", "--quiet", "--initial-branch=main", work]);
    await writeFile(join(work, "app.js"), "let nm = 1;\n");
    git(["add", "--all"], work);
    git(["commit", "--quiet", "-m", "rename"], work);
    head = git(["rev-parse", "HEAD"], work);
    const mirror = join(parent, "mirror.git");
    git(["clone", "--quiet", "--bare", work, mirror]);
    hosted.pulls = [
      {
        number: 7,
        state: "open",
        title: "Rename",
        user: { login: "octo-member" },
        author_association: "MEMBER",
        head: { ref: "feature", sha: head, repo: { full_name: REPO } },
        base: {
          ref: "main",
          sha: head,
          repo: { full_name: REPO, name: "widgets", owner: { login: "acme" } },
        },
      },
    ];
    bed = await startStickyBed({
      agents: ["review-agent"],
      pipelines: { "pr-review": PIPELINE },
      hooks: ["review-hook"],
      codehostSource: true,
      repos: { [REPO]: { hosted, cloneUrl: mirror } },
    });
    bed.github.files.set(`${REPO}#7`, [{ filename: "src/app.js", status: "modified", patch: PATCH }]);
  });

  afterAll(async () => {
    await bed?.close();
    if (parent) await rm(parent, { recursive: true, force: true });
  });

  const settled = (trigger: string) =>
    waitFor(async () => {
      const { rows } = await bed.pool.query("SELECT status FROM svc.triggers WHERE id = $1", [trigger]);
      return ["completed", "error", "discarded"].includes(rows[0]?.status) ? rows[0].status : undefined;
    }, `trigger ${trigger} to settle`);

  it("runs at once, cancels nothing, posts nothing, and records the review it would have posted", async () => {
    const live = await bed.fire("review-hook", 7, head);
    await agentRunning(bed.pool, live);

    const response = await fetch(`${bed.url}/repos/${REPO}/pulls/7/rehearse`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(response.status, await response.clone().text()).toBe(202);
    const { trigger: held } = (await response.json()) as { trigger: string };
    // not kept waiting behind the live run of its pull request's group, and the live run goes on
    await agentRunning(bed.pool, held);
    const liveRun = (await lineage(bed.pool, live)).invocations[0];
    expect(liveRun.status).toBe("running");
    const heldRun = (await lineage(bed.pool, held)).invocations[0];
    const { rows: flags } = await bed.pool.query(
      "SELECT id, outputs_held, concurrency_group FROM svc.invocations WHERE id = ANY($1) ORDER BY outputs_held",
      [[liveRun.id, heldRun.id]],
    );
    expect(flags).toEqual([
      { id: liveRun.id, outputs_held: false, concurrency_group: `pull_request:pr-review:${REPO}#7` },
      { id: heldRun.id, outputs_held: true, concurrency_group: null },
    ]);

    // each waiting agent takes one result; the second is handed over once the first was taken
    await bed.release("review-agent", RESULT);
    await waitFor(async () => {
      const { rows } = await bed.pool.query(
        "SELECT count(*)::int AS n FROM svc.triggers WHERE id = ANY($1) AND status = 'completed'",
        [[live, held]],
      );
      return rows[0].n >= 1;
    }, "one of the two runs to finish");
    await bed.release("review-agent", RESULT);
    expect(await settled(live)).toBe("completed");
    expect(await settled(held)).toBe("completed");

    // the pull request holds the live run's one sticky comment and nothing of the held run
    const comments = bed.github.comments.get(`${REPO}#7`) ?? [];
    expect(comments).toHaveLength(1);
    expect(comments[0]!.body).toContain(`pr-review 3.1.0 · ${live}`);
    const writes = bed.github.requests.filter((request) => request.method !== "GET");
    expect(writes.length).toBeGreaterThan(0);
    for (const write of writes) {
      expect(JSON.stringify(write.body ?? "")).not.toContain(held);
      expect(JSON.stringify(write.body ?? "")).not.toContain(heldRun.id);
    }
    const { rows: sticky } = await bed.pool.query("SELECT invocation_id FROM svc.sticky_comments");
    expect(sticky).toEqual([{ invocation_id: liveRun.id }]);
    const { rows: deliveries } = await bed.pool.query(
      "SELECT count(*)::int AS n FROM svc.output_deliveries WHERE invocation_id = $1",
      [heldRun.id],
    );
    expect(deliveries[0].n).toBe(0);

    // what it would have posted: the same review, stamped as its own, placed against the diff
    const { rows: artifacts } = await bed.pool.query(
      "SELECT name, rendered FROM svc.artifacts WHERE invocation_id = $1 AND name LIKE 'held/%' ORDER BY name",
      [heldRun.id],
    );
    expect(artifacts.map((row) => row.name)).toEqual(["held/outputs.json", "held/outputs.md"]);
    const text = artifacts[1].rendered as string;
    expect(text).toContain(`## outputs.review → ${REPO}#7 (codehost.review, sticky, COMMENT)`);
    expect(text).toContain("Naming: one finding.");
    expect(text).toContain(`pr-review 3.1.0 · ${held}`);
    const [output] = JSON.parse(artifacts[0].rendered as string) as {
      to: string;
      comments: { path: string; line: number }[];
    }[];
    expect(output!.to).toBe(`${REPO}#7`);
  });
});
