import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lineage, waitForTrigger } from "../../integration/worker/helpers.ts";
import { type AuthorBed, FORK, REPO, REPOSITORY, startAuthorBed } from "./author-bed.ts";

/**
 * A comment command on a pull request (`@svc review`) is an `issue_comment`, which states no head
 * commit: svc checked out whatever the pull request's ref held when the run got to it, and posted
 * the review without `commit_id`, which GitHub pins to the newest head, so a push landing after the
 * command had a review (an approval, even) standing on code nobody reviewed. Nor did svc see that a
 * comment was on a fork's pull request. Dispatch now reads the head from GitHub
 * (`GET /repos/{o}/{r}/pulls/{n}`), records it on the trigger, and the run checks out, judges and
 * publishes against it. Through the real ingress and worker, git over smart HTTP and signed
 * deliveries in GitHub's payload shapes.
 */
const PIPELINES = {
  review: `trigger:
  codehost:
    - command: review
result:
  schema:
    type: object
    properties:
      review: { $ref: svc://schemas/codehost/review/v1 }
    required: [review]
outputs:
  review: { handler: codehost.review }
`,
  // unsandboxed, on every comment: the team's own
  "comment-bot": "trigger:\n  codehost: [issue_comment.created]\n",
};

const member = { login: "octo-member", id: 111, type: "User", site_admin: false };

function pull(number: number, head: { sha: string; ref: string; repo: object }, base: string) {
  return {
    url: `https://api.github.com/repos/${REPO}/pulls/${number}`,
    number,
    state: "open",
    title: "Widgets",
    user: member,
    author_association: "MEMBER",
    head: { label: `x:${head.ref}`, ...head, user: member },
    base: { label: "acme:main", ref: "main", sha: base, repo: REPOSITORY, user: member },
  };
}

function comment(number: number, body: string, id: number) {
  return {
    action: "created",
    issue: {
      number,
      title: "Widgets",
      state: "open",
      user: member,
      author_association: "MEMBER",
      pull_request: {
        url: `https://api.github.com/repos/${REPO}/pulls/${number}`,
        html_url: `https://github.com/${REPO}/pull/${number}`,
      },
    },
    comment: { id, body, user: member, author_association: "MEMBER" },
    repository: REPOSITORY,
    sender: member,
  };
}

describe("hostile: a comment command's pull request head", () => {
  let bed: AuthorBed;
  let base: string;

  beforeAll(async () => {
    bed = await startAuthorBed({ pipelines: PIPELINES, permissions: { "octo-member": "write" } });
    base = bed.commit({ "src/widget.js": "export const size = 1;\n" }, "base");
    bed.push(base, "refs/heads/main");
  }, 120_000);

  afterAll(async () => {
    await bed?.close();
  });

  it("`@svc review` checks out and reviews the head GitHub named at dispatch, not a commit pushed after it", async () => {
    const reviewed = bed.commit(
      { "src/widget.js": "export const size = 2;\n" },
      "the change asked about",
      base,
    );
    bed.push(reviewed, "refs/heads/feature");
    bed.pulls.push(pull(7, { sha: reviewed, ref: "feature", repo: REPOSITORY }, base));
    // the default branch moves on, and a push lands on the pull request after the command was given
    bed.push(bed.commit({ "NEWS.md": "main moves on\n" }, "main", base), "refs/heads/main");
    const later = bed.commit(
      { "src/widget.js": "export const size = process.env;\n" },
      "unreviewed",
      reviewed,
    );
    bed.push(later, "refs/pull/7/head");
    const trigger = await bed.deliver("issue_comment", comment(7, "@svc review", 501));
    const done = await waitForTrigger(bed.pool, trigger);
    expect(done.status, JSON.stringify(done.diagnostic)).toBe("completed");
    const { invocations } = await lineage(bed.pool, trigger);
    expect(invocations.map((i) => i.status)).toEqual(["completed"]);
    expect(await bed.seen(trigger)).toEqual({ head: reviewed, sha: reviewed });
    const reviews = bed.github.reviews.get(`${REPO}#7`) ?? [];
    expect(reviews.map((r) => r.commit_id)).toEqual([reviewed]);
    const { rows } = await bed.pool.query("SELECT pull_head FROM svc.triggers WHERE id = $1", [trigger]);
    expect(rows[0].pull_head).toMatchObject({
      sha: reviewed,
      ref: "feature",
      repo: REPO,
      base: { sha: base },
    });
  });

  it("a member's comment on a fork's pull request starts no unsandboxed pipeline: the head is a fork's", async () => {
    const forked = bed.commit({ "src/widget.js": "export const size = 3;\n" }, "from a fork", base);
    bed.push(forked, "refs/pull/8/head");
    bed.pulls.push(pull(8, { sha: forked, ref: "patch-1", repo: FORK }, base));
    const trigger = await bed.deliver("issue_comment", comment(8, "Looks fine to me.", 502));
    const done = await waitForTrigger(bed.pool, trigger);
    expect([done.status, done.diagnostic?.code]).toEqual(["completed", "author_not_allowed"]);
    expect((await lineage(bed.pool, trigger)).workloads).toEqual([]);
  });

  it("a comment on a pull request whose head GitHub does not name is judged as a fork's (fail closed)", async () => {
    const trigger = await bed.deliver("issue_comment", comment(9, "Looks fine to me.", 503));
    const done = await waitForTrigger(bed.pool, trigger);
    expect([done.status, done.diagnostic?.code]).toEqual(["completed", "author_not_allowed"]);
  });
});
