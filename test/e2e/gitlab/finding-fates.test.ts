import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../../support/wait-for.ts";
import { svc } from "../cli/support.ts";
import {
  BOT,
  DIFF_V2,
  type GitlabBed,
  mergeRequestPayload,
  PEOPLE_TOKENS,
  PROJECT,
  SHA1,
  SHA2,
  startGitlabBed,
} from "./gitlab-bed.ts";

const OUTPUTS = `result:
  schema:
    type: object
    properties:
      review: { $ref: svc://schemas/codehost/review/v1 }
    required: [review]
outputs:
  review: { handler: codehost.review }
`;
const LIVE = `trigger:
  codehost: [merge_request.open]
targets: [live-agent]
instructions: Review the merge request.
shadow: { version_file: pipelines/mr-review.next.yaml, share: 1 }
${OUTPUTS}`;
const CANDIDATE = `version: 2.1.0-next.1
trigger:
  codehost: [merge_request.open]
targets: [next-agent]
instructions: Review the merge request, naming the risk first.
${OUTPUTS}`;

const at = (line: number, body: string) => ({ path: "src/app.js", line, body });

/**
 * Issue 57 on GitLab, judged by what people did: a shadowed pipeline reviews a merge request twice.
 * Each finding the live version opens is recorded with its discussion; the candidate's would-be
 * findings are recorded placed on the merge request's diff (one outside it is folded, not
 * recorded). Between the reviews a developer resolves the discussion on line 2 and the push changes
 * that line, resolves line 21's unchanged (a dismissal) and thumbs down line 20's. At the second
 * review svc reads the fates from the discussions, and `svc eval compare --shadow` has them.
 */
describe("GitLab: findings are recorded and judged by what people did", () => {
  let bed: GitlabBed;
  let home: string;
  const api = () => `${bed.gitlab.apiUrl}/projects/${encodeURIComponent(PROJECT)}/merge_requests/5`;
  const discussionOn = (line: number) =>
    bed.gitlab
      .discussions(PROJECT, 5)
      .find(
        (discussion) =>
          discussion.notes[0]?.author.id === BOT.id && discussion.notes[0]?.position?.new_line === line,
      )!;

  beforeAll(async () => {
    bed = await startGitlabBed({
      agents: ["live-agent", "next-agent"],
      pipelines: { "mr-review": LIVE, "mr-review.next": CANDIDATE },
    });
    home = await mkdtemp(join(tmpdir(), "svc-gitlab-fates-"));
  });

  afterAll(async () => {
    await bed?.close();
    if (home) await rm(home, { recursive: true, force: true });
  });

  /** One merge request event: both versions review it; waits for both runs to end. */
  async function review(sha: string, live: unknown[], candidate: unknown[]): Promise<void> {
    await bed.release("live-agent", { review: { event: "COMMENT", body: "Live review.", comments: live } });
    await bed.release("next-agent", {
      review: { event: "COMMENT", body: "Candidate review.", comments: candidate },
    });
    const trigger = await bed.deliver(mergeRequestPayload({ sha }), "Merge Request Hook");
    await waitFor(async () => {
      const { rows } = await bed.pool.query(
        `SELECT i.status FROM svc.invocations i JOIN svc.workloads w ON w.id = i.workload_id
          WHERE w.trigger_id = $1`,
        [trigger],
      );
      return rows.length === 2 && rows.every((row) => ["completed", "failed"].includes(row.status));
    }, "the live and the shadow run to end");
  }

  const findings = async () =>
    (
      await bed.pool.query(
        `SELECT version, shadow, path, start_line, end_line, fingerprint, fate, fate_reason, review_id,
                comment_id
           FROM svc.review_findings ORDER BY shadow, id`,
      )
    ).rows;

  async function act(token: string, method: string, path: string, body: Record<string, unknown>) {
    const response = await fetch(`${api()}/${path}`, {
      method,
      headers: { "content-type": "application/json", "private-token": token },
      body: JSON.stringify(body),
    });
    expect(response.status, await response.clone().text()).toBeLessThan(300);
  }

  it("records the live findings with their discussions and the candidate's placed, and reads their fates from the discussions", async () => {
    await review(
      SHA1,
      [at(2, "nm is a poor name"), at(21, "b() can throw here"), at(20, "a is never reassigned")],
      [
        at(2, "Rename nm: the name says nothing"),
        at(21, "c is undefined when b() throws"),
        at(20, "a could be inlined"),
        // outside the diff: folded into the would-be summary, never a finding on its lines
        at(50, "the file is long"),
      ],
    );
    // the candidate posted nothing: only the live version's three discussions
    const opened = bed.gitlab
      .discussions(PROJECT, 5)
      .filter((discussion) => discussion.notes[0]?.position)
      .map((discussion) => discussion.notes[0]!.body.split(/\r?\n/)[0]);
    // on failure, who wrote what: a candidate's finding here would be a published held review
    const said = bed.gitlab
      .discussions(PROJECT, 5)
      .map(
        (discussion) =>
          `${discussion.notes[0]!.author.username}: ${discussion.notes[0]!.body.split(/\r?\n/)[0]}`,
      );
    expect(opened.sort(), said.join("\n")).toEqual([
      "a is never reassigned",
      "b() can throw here",
      "nm is a poor name",
    ]);
    const first = await findings();
    const live = (line: number) => ({
      review_id: discussionOn(line).id,
      fingerprint: expect.stringMatching(/^[0-9a-f]{16}$/),
    });
    expect(first).toEqual([
      expect.objectContaining({ version: "2.0.0", shadow: false, end_line: 2, fate: "open", ...live(2) }),
      expect.objectContaining({ version: "2.0.0", shadow: false, end_line: 21, fate: "open", ...live(21) }),
      expect.objectContaining({ version: "2.0.0", shadow: false, end_line: 20, fate: "open", ...live(20) }),
      ...[2, 21, 20].map((line) =>
        expect.objectContaining({
          version: "2.1.0-next.1",
          shadow: true,
          end_line: line,
          review_id: null,
          fingerprint: expect.stringMatching(/^[0-9a-f]{16}$/),
        }),
      ),
    ]);

    const { dev } = PEOPLE_TOKENS;
    const [on2, on21, on20] = [discussionOn(2), discussionOn(21), discussionOn(20)];
    await act(dev, "PUT", `discussions/${on2.id}`, { resolved: true });
    await act(dev, "PUT", `discussions/${on21.id}`, { resolved: true });
    await act(dev, "POST", `notes/${on20.notes[0]!.id}/award_emoji`, { name: "thumbsdown" });
    // the push changes line 2; lines 20 and 21 stand as they were
    bed.gitlab.push(PROJECT, 5, {
      head_sha: SHA2,
      diffs: [{ old_path: "src/app.js", new_path: "src/app.js", diff: DIFF_V2 }],
    });

    await review(SHA2, [at(2, "count is never reassigned: make it const")], [at(2, "count could be const")]);
    const rows = await findings();
    expect(
      rows
        .filter((row) => !row.shadow)
        .map((row) => [row.end_line, row.fate, row.fate_reason, row.comment_id]),
    ).toEqual([
      [2, "resolved_with_change", "resolved by @dev after its lines changed", String(on2.notes[0]!.id)],
      [
        21,
        "dismissed",
        expect.stringContaining("resolved without a change by @dev"),
        String(on21.notes[0]!.id),
      ],
      [20, "thumbed_down", expect.stringContaining("thumbed down by @dev"), String(on20.notes[0]!.id)],
      [2, "open", null, null],
    ]);
    // a shadow finding's fate is never its own: it is read from the live finding on its lines
    expect(rows.filter((row) => row.shadow).map((row) => [row.end_line, row.fate])).toEqual([
      [2, "open"],
      [21, "open"],
      [20, "open"],
      [2, "open"],
    ]);
  });

  it("svc eval compare --shadow has the GitLab signals for both versions", async () => {
    const env = { HOME: home, SVC_DAEMON_URL: bed.url };
    const run = await svc(["eval", "compare", "--shadow", "mr-review", "--json"], env);
    expect(run.stderr).toBe("");
    const json = JSON.parse(run.stdout);
    expect(json).toMatchObject({
      pipeline: "mr-review",
      live: { version: "2.0.0", runs: 2, findings: 4 },
      candidate: { version: "2.1.0-next.1", runs: 2, findings: 4, sameLines: { count: 4, n: 4 } },
    });
    const signal = (name: string) => json.signals.find((s: { name: string }) => s.name === name);
    for (const name of ["resolved_with_change", "dismissed", "thumbed_down"])
      expect(signal(name)).toMatchObject({ live: { count: 1, n: 4 }, candidate: { count: 1, n: 4 } });
  });
});
