import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitForTrigger } from "../../integration/worker/helpers.ts";
import { svc } from "../cli/support.ts";
import {
  BOT,
  DIFF_V2,
  type GitlabBed,
  mergeRequestPayload,
  PEOPLE_TOKENS,
  PROJECT,
  project,
  SHA1,
  SHA2,
  startGitlabBed,
} from "./gitlab-bed.ts";

const REVIEW = `trigger:
  codehost: [merge_request.open]
targets: [review-agent]
instructions: Review the merge request.
result:
  schema:
    type: object
    properties:
      review: { $ref: svc://schemas/codehost/review/v1 }
    required: [review]
outputs:
  review: { handler: codehost.review }
`;

const SHA3 = "3333333333333333333333333333333333333333";
const at = (line: number, body: string) => ({ path: "src/app.js", line, body });
// line 21 stands in both versions of the diff; line 2 changes with DIFF_V2
const RESOLVED = at(21, "b() may throw here");
const THUMBED = at(2, "this name says little");
const STRANGERS = at(2, "prefer a constant here");
const ANSWERED = at(20, "a is never reassigned");
const FIXED = at(2, "check for null first");
const FRESH = at(21, "c is never used");

/**
 * Dismissed findings on GitLab (issue 56, part 5), through the real ingress and worker and the
 * loopback GitLab: a developer resolves svc's discussion while its line stands, thumbs down a
 * finding, answers one "won't fix"; the next push's review does not raise them and counts them.
 * What a stranger does (a thumbsdown, a "false positive"), and a resolve after the line changed,
 * dismiss nothing. Once the dismissal note is deleted its finding is raised again.
 */
describe("GitLab: dismissed findings are remembered", () => {
  let bed: GitlabBed;
  const api = () => `${bed.gitlab.apiUrl}/projects/${encodeURIComponent(PROJECT)}/merge_requests/5`;
  const positioned = () =>
    bed.gitlab.discussions(PROJECT, 5).filter((discussion) => discussion.notes[0]?.position);
  const discussionOf = (text: string) =>
    positioned().find((discussion) => discussion.notes[0]!.body.startsWith(text))!;

  beforeAll(async () => {
    bed = await startGitlabBed({
      agents: ["review-agent"],
      pipelines: { "mr-review": REVIEW },
      // a stranger can award emoji and reply on a public project's merge request
      projects: [project({ visibility: "public" })],
    });
  });

  afterAll(async () => {
    await bed?.close();
  });

  /** svc reviews merge request 5 at `sha`; the findings it opened and its summary note. */
  async function review(sha: string, body: string, comments: unknown[]) {
    const before = new Set(positioned().map((discussion) => discussion.id));
    const id = await bed.deliver(mergeRequestPayload({ sha }), "Merge Request Hook");
    await bed.release("review-agent", { review: { event: "COMMENT", body, comments } });
    expect(await waitForTrigger(bed.pool, id)).toMatchObject({ status: "completed", diagnostic: null });
    const opened = positioned()
      .filter((discussion) => !before.has(discussion.id))
      .map((discussion) => discussion.notes[0]!.body.split(/\r?\n/)[0]);
    const summary = bed.gitlab
      .notes(PROJECT, 5)
      .find((note) => note.author.id === BOT.id && !note.position && note.body.startsWith(body))!;
    return { opened, summary: summary.body };
  }

  /** A person's act on GitLab's page, with their own token. */
  async function act(token: string, method: string, path: string, body: Record<string, unknown>) {
    const response = await fetch(`${api()}/${path}`, {
      method,
      headers: { "content-type": "application/json", "private-token": token },
      body: JSON.stringify(body),
    });
    expect(response.status, await response.clone().text()).toBeLessThan(300);
  }

  it("a finding a developer resolved unchanged, thumbed down or answered is not raised on the next push and is counted; a stranger's acts and a resolve after a change dismiss nothing; a deleted dismissal lets it be raised again", async () => {
    const first = await review(SHA1, "First.", [RESOLVED, THUMBED, STRANGERS, ANSWERED, FIXED]);
    expect(first.opened).toHaveLength(5);

    const { dev, stranger } = PEOPLE_TOKENS;
    await act(dev, "PUT", `discussions/${discussionOf(RESOLVED.body).id}`, { resolved: true });
    await act(dev, "PUT", `discussions/${discussionOf(FIXED.body).id}`, { resolved: true });
    await act(dev, "POST", `notes/${discussionOf(THUMBED.body).notes[0]!.id}/award_emoji`, {
      name: "thumbsdown",
    });
    await act(dev, "POST", `discussions/${discussionOf(ANSWERED.body).id}/notes`, {
      body: "Won't fix: tests reassign it.",
    });
    await act(stranger, "POST", `notes/${discussionOf(STRANGERS.body).notes[0]!.id}/award_emoji`, {
      name: "thumbsdown",
    });
    await act(stranger, "POST", `discussions/${discussionOf(STRANGERS.body).id}/notes`, {
      body: "False positive.",
    });

    // a push changes line 2: the findings there would all be raised again
    const diffs = [{ old_path: "src/app.js", new_path: "src/app.js", diff: DIFF_V2 }];
    bed.gitlab.push(PROJECT, 5, { head_sha: SHA2, diffs });
    const second = await review(SHA2, "Second.", [RESOLVED, THUMBED, STRANGERS, ANSWERED, FIXED, FRESH]);
    expect(second.opened.sort()).toEqual([FIXED.body, STRANGERS.body, FRESH.body].sort());
    expect(second.summary).toContain("Second.\n\n3 findings dismissed before were not raised again");
    const { rows } = await bed.pool.query(
      "SELECT id, repo, path, fingerprint, title, body FROM svc.notes WHERE kind = 'dismissal' ORDER BY title",
    );
    expect(rows).toEqual([
      {
        id: expect.stringMatching(/^not_/),
        repo: PROJECT,
        path: "src/app.js",
        fingerprint: expect.stringMatching(/^[0-9a-f]{16}$/),
        title: ANSWERED.body,
        body: expect.stringContaining(`(answered "Won't fix" by @dev)`),
      },
      expect.objectContaining({
        title: RESOLVED.body,
        body: expect.stringContaining("(resolved without a change by @dev)"),
      }),
      expect.objectContaining({
        title: THUMBED.body,
        body: expect.stringContaining("(thumbed down by @dev)"),
      }),
    ]);

    const url = (bed.pool.options as { connectionString: string }).connectionString;
    const resolved = rows.find((row) => row.title === RESOLVED.body)!;
    const deleted = await svc(["notes", "delete", resolved.id, "--json"], { SVC_DATABASE_URL: url });
    expect(deleted.stderr).toBe("");
    expect(deleted.code).toBe(0);

    bed.gitlab.push(PROJECT, 5, { head_sha: SHA3, diffs });
    const third = await review(SHA3, "Third.", [RESOLVED]);
    expect(third.opened).toEqual([RESOLVED.body]);
    expect(third.summary).not.toContain("dismissed");
    // the discussion it was judged from is not judged again
    const left = await bed.pool.query("SELECT title FROM svc.notes WHERE kind = 'dismissal' ORDER BY title");
    expect(left.rows).toEqual([{ title: ANSWERED.body }, { title: THUMBED.body }]);
  });
});
