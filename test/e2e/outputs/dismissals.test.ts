import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitForTrigger } from "../../integration/worker/helpers.ts";
import { svc } from "../cli/support.ts";
import { FILES_V1, FILES_V2, REPO, type StickyBed, startStickyBed } from "./sticky-bed.ts";

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
  review: { handler: codehost.review }
`;

/** the tokens people act with on the loopback GitHub, as they would on GitHub's page */
const PEOPLE = { maintainer: "ghp_maintainerOwnToken0001", "drive-by": "ghp_driveByOwnToken00001" };

const SHA = ["1111111", "2222222", "3333333", "4444444"].map((prefix) =>
  `${prefix}${"abcdef0".repeat(5)}`.slice(0, 40),
);

/**
 * Dismissed findings (issue 56, part 5), against a real ingress and worker and the loopback GitHub:
 * a member resolves svc's thread while its lines stand unchanged; the next review drops that finding
 * and says so, and the dismissal is a note of kind `dismissal`; once `svc notes delete` removed it,
 * the finding is raised again. A member's 👎 on svc's comment dismisses its finding too; a 👎 or a
 * resolve by someone outside the team does not.
 */
describe("dismissed findings are remembered", () => {
  let bed: StickyBed;
  const pull = `${REPO}#11`;
  const finding = { path: "src/app.js", line: 21, body: "b() can throw here" };
  const firstLines = (review: Record<string, unknown>) =>
    ((review.comments ?? []) as { body: string }[]).map((comment) => comment.body.split("\n")[0]);

  beforeAll(async () => {
    bed = await startStickyBed({
      agents: ["review-agent"],
      pipelines: { "pr-review": REVIEW_PIPELINE },
      hooks: ["review-hook"],
      users: Object.fromEntries(Object.entries(PEOPLE).map(([login, token]) => [token, login])),
    });
    bed.github.collaborators.set(REPO, new Map([["maintainer", "write"]]));
  });

  afterAll(async () => {
    await bed?.close();
  });

  async function review(sha: string, comments: unknown[], number = 11) {
    await bed.release("review-agent", { review: { event: "COMMENT", body: "Review.", comments } });
    const id = await bed.fire("review-hook", number, sha);
    expect((await waitForTrigger(bed.pool, id)).status).toBe("completed");
    return bed.github.reviews.get(`${REPO}#${number}`)!.at(-1)!;
  }

  it("a finding resolved without a change is not raised again on the next push, and is after its suppression is removed", async () => {
    bed.github.files.set(pull, FILES_V1);
    const first = await review(SHA[0]!, [finding]);
    expect(firstLines(first)).toEqual(["b() can throw here"]);
    // a member resolves svc's thread on GitHub; its lines have not changed
    const thread = bed.github.threads.find((entry) => entry.pull === pull)!;
    thread.isResolved = true;
    thread.resolvedBy = "maintainer";

    const fresh = { path: "src/app.js", line: 2, body: "nm is a poor name" };
    const second = await review(SHA[1]!, [finding, fresh]);
    expect(firstLines(second)).toEqual(["nm is a poor name"]);
    expect(second.body).toContain("Review.\n\n1 finding dismissed before was not raised again");
    const { rows } = await bed.pool.query(
      "SELECT id, repo, path, fingerprint, title FROM svc.notes WHERE kind = 'dismissal'",
    );
    expect(rows).toEqual([
      {
        id: expect.stringMatching(/^not_/),
        repo: REPO,
        path: "src/app.js",
        fingerprint: expect.stringMatching(/^[0-9a-f]{16}$/),
        title: "b() can throw here",
      },
    ]);

    const url = (bed.pool.options as { connectionString: string }).connectionString;
    const deleted = await svc(["notes", "delete", rows[0].id, "--json"], { SVC_DATABASE_URL: url });
    expect(deleted.stderr).toBe("");
    expect(deleted.code).toBe(0);

    const third = await review(SHA[2]!, [finding]);
    expect(firstLines(third)).toEqual(["b() can throw here"]);
    expect(third.body).not.toContain("dismissed");
    // the thread it was judged from is not judged again
    expect((await bed.pool.query("SELECT 1 FROM svc.notes WHERE kind = 'dismissal'")).rowCount).toBe(0);
  });

  it("a resolve by someone without write access dismisses nothing", async () => {
    const other = `${REPO}#12`;
    bed.github.files.set(other, FILES_V1);
    await bed.release("review-agent", { review: { event: "COMMENT", body: "Review.", comments: [finding] } });
    const id = await bed.fire("review-hook", 12, SHA[0]!);
    expect((await waitForTrigger(bed.pool, id)).status).toBe("completed");
    const thread = bed.github.threads.find((entry) => entry.pull === other)!;
    thread.isResolved = true;
    thread.resolvedBy = "drive-by";
    await bed.release("review-agent", { review: { event: "COMMENT", body: "Review.", comments: [finding] } });
    const again = await bed.fire("review-hook", 12, SHA[1]!);
    expect((await waitForTrigger(bed.pool, again)).status).toBe("completed");
    const last = bed.github.reviews.get(other)!.at(-1)!;
    expect(firstLines(last)).toEqual(["b() can throw here"]);
    expect((await bed.pool.query("SELECT 1 FROM svc.notes WHERE kind = 'dismissal'")).rowCount).toBe(0);
  });

  it("a member's 👎 on svc's finding dismisses it; an outsider's 👎 does not", async () => {
    const other = `${REPO}#13`;
    bed.github.files.set(other, FILES_V1);
    const named = { path: "src/app.js", line: 2, body: "this name says little" };
    const constant = { path: "src/app.js", line: 2, body: "prefer a constant here" };
    const first = await review(SHA[0]!, [named, constant], 13);
    expect(firstLines(first)).toEqual(["this name says little", "prefer a constant here"]);
    const rootOf = (text: string) =>
      bed.github.reviewComments.get(other)!.find((comment) => comment.body.startsWith(text))!.id;
    // on GitHub's page: the maintainer thumbs down one finding, a drive-by the other
    await thumbDown(PEOPLE.maintainer, rootOf(named.body));
    await thumbDown(PEOPLE["drive-by"], rootOf(constant.body));

    // a push changes line 2: both threads are outdated, so both findings would be raised again
    bed.github.pushFiles(other, FILES_V2);
    const second = await review(SHA[1]!, [named, constant], 13);
    expect(firstLines(second)).toEqual(["prefer a constant here"]);
    expect(second.body).toContain("Review.\n\n1 finding dismissed before was not raised again");
    const { rows } = await bed.pool.query("SELECT path, title, body FROM svc.notes WHERE kind = 'dismissal'");
    expect(rows).toEqual([
      {
        path: "src/app.js",
        title: "this name says little",
        body: expect.stringContaining("(thumbed down by @maintainer)"),
      },
    ]);
  });

  /** A 👎 as a person gives it on GitHub's page (`POST …/pulls/comments/{id}/reactions`). */
  async function thumbDown(token: string, commentId: number) {
    const response = await fetch(`${bed.github.url}/repos/${REPO}/pulls/comments/${commentId}/reactions`, {
      method: "POST",
      headers: { authorization: `token ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ content: "-1" }),
    });
    expect(response.status).toBe(201);
    expect(await response.json()).toMatchObject({ content: "-1", node_id: expect.any(String), user: {} });
  }
});
