import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../../support/wait-for.ts";
import { svc } from "../cli/support.ts";
import { FILES_V1, FILES_V2, REPO, type StickyBed, startStickyBed } from "./sticky-bed.ts";

/**
 * Issue 57, judged by what people did: a shadowed pipeline reviews a pull request twice; between
 * the reviews the author pushes a change to the lines of one live finding and resolves its thread,
 * a member resolves another unchanged (a dismissal) and gives a third a 👎. At the second review svc
 * reads the fates: resolved_with_change, dismissed and thumbed_down for the live version, and the candidate's findings on the
 * same lines count the same; `svc eval compare --shadow` prints both versions with intervals.
 */
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
  webhook: [review-hook]
targets: [live-agent]
instructions: Review the pull request.
shadow: { version_file: pipelines/review.next.yaml, share: 1 }
${OUTPUTS}`;
const CANDIDATE = `version: 3.2.0-next.1
trigger:
  webhook: [review-hook]
targets: [next-agent]
instructions: Review the pull request, naming the risk first.
${OUTPUTS}`;

const SHA = ["1111111", "2222222"].map((prefix) => `${prefix}${"abcdef0".repeat(5)}`.slice(0, 40));
const PULL = `${REPO}#7`;

describe("a shadow version is judged by what people did with the live findings", () => {
  let bed: StickyBed;
  let home: string;

  beforeAll(async () => {
    bed = await startStickyBed({
      agents: ["live-agent", "next-agent"],
      pipelines: { review: LIVE, "review.next": CANDIDATE },
      hooks: ["review-hook"],
    });
    bed.github.collaborators.set(REPO, new Map([["maintainer", "write"]]));
    home = await mkdtemp(join(tmpdir(), "svc-shadow-judged-"));
  });

  afterAll(async () => {
    await bed?.close();
    if (home) await rm(home, { recursive: true, force: true });
  });

  /** One event: both versions review it, each with its findings; waits for both runs to end. */
  async function review(sha: string, live: unknown[], candidate: unknown[]): Promise<string> {
    await bed.release("live-agent", { review: { event: "COMMENT", body: "Live review.", comments: live } });
    await bed.release("next-agent", {
      review: { event: "COMMENT", body: "Candidate review.", comments: candidate },
    });
    const trigger = await bed.fire("review-hook", 7, sha);
    await waitFor(async () => {
      const { rows } = await bed.pool.query(
        `SELECT i.status FROM svc.invocations i JOIN svc.workloads w ON w.id = i.workload_id
          WHERE w.trigger_id = $1`,
        [trigger],
      );
      return rows.length === 2 && rows.every((row) => ["completed", "failed"].includes(row.status));
    }, "the live and the shadow run to end");
    return trigger;
  }

  const findings = async () =>
    (
      await bed.pool.query(
        `SELECT version, shadow, path, start_line, end_line, rule, fate, review_id IS NOT NULL AS posted,
                comment_id IS NOT NULL AS commented
           FROM svc.review_findings ORDER BY shadow, id`,
      )
    ).rows;

  it("records each version's findings, and the fates people gave the live ones count for both", async () => {
    bed.github.files.set(PULL, FILES_V1);
    await review(
      SHA[0]!,
      [
        { path: "src/app.js", line: 2, body: "nm is a poor name" },
        { path: "src/app.js", line: 21, body: "b() can throw here" },
        { path: "src/app.js", line: 22, body: "return a hides c" },
      ],
      [
        { path: "src/app.js", line: 2, body: "Rename nm: the name says nothing" },
        { path: "src/app.js", line: 21, body: "c is undefined when b() throws" },
        { path: "src/app.js", line: 22, body: "c is never used" },
      ],
    );
    // the candidate posted nothing: one review on the pull request, the live one
    expect(bed.github.reviews.get(PULL)!.map((posted) => posted.body.split("\n")[0])).toEqual([
      "Live review.",
    ]);
    expect(await findings()).toEqual([
      expect.objectContaining({ version: "3.1.0", shadow: false, end_line: 2, fate: "open", posted: true }),
      expect.objectContaining({ version: "3.1.0", shadow: false, end_line: 21, fate: "open", posted: true }),
      expect.objectContaining({ version: "3.1.0", shadow: false, end_line: 22, fate: "open", posted: true }),
      expect.objectContaining({ version: "3.2.0-next.1", shadow: true, end_line: 2, posted: false }),
      expect.objectContaining({ version: "3.2.0-next.1", shadow: true, end_line: 21, posted: false }),
      expect.objectContaining({ version: "3.2.0-next.1", shadow: true, end_line: 22, posted: false }),
    ]);

    // the author changes line 2 and resolves its thread; a member resolves line 21's unchanged and
    // gives line 22's a 👎
    bed.github.pushFiles(PULL, FILES_V2);
    const threads = bed.github.threads.filter((thread) => thread.pull === PULL);
    const onLine = (line: number) => {
      const comment = bed.github.reviewComments.get(PULL)!.find((c) => c.original_line === line)!;
      return threads.find((thread) => thread.commentId === comment.id)!;
    };
    expect(onLine(2).isOutdated).toBe(true);
    Object.assign(onLine(2), { isResolved: true, resolvedBy: "octo-author" });
    Object.assign(onLine(21), { isResolved: true, resolvedBy: "maintainer" });
    const maintainer = { login: "maintainer", id: 77, type: "User" };
    bed.github.reviewReactions.set(onLine(22).commentId!, [
      { id: 1, node_id: "REA_1", user: maintainer, content: "-1", created_at: new Date().toISOString() },
    ]);

    await review(
      SHA[1]!,
      [{ path: "src/app.js", line: 2, body: "count is never reassigned: make it const" }],
      [{ path: "src/app.js", line: 2, body: "count could be const" }],
    );
    const rows = await findings();
    expect(rows.filter((row) => !row.shadow).map((row) => [row.end_line, row.fate, row.commented])).toEqual([
      [2, "resolved_with_change", true],
      [21, "dismissed", true],
      [22, "thumbed_down", true],
      [2, "open", false],
    ]);
    // a shadow finding's fate is never its own: it is read from the live finding on its lines
    expect(rows.filter((row) => row.shadow).every((row) => row.fate === "open")).toBe(true);
  });

  it("svc eval compare --shadow prints both versions with intervals, and its JSON has the numbers", async () => {
    const env = { HOME: home, SVC_DAEMON_URL: bed.url };
    const text = await svc(["eval", "compare", "--shadow", "review"], env);
    expect(text.stderr).toBe("");
    expect(text.code).toBe(0);
    const lines = text.stdout.split("\n");
    expect(lines[0]).toMatch(
      /^MEASURE\s+LIVE: 3\.1\.0 \(2 runs, 4 findings\)\s+CANDIDATE: 3\.2\.0-next\.1 \(2 runs, 4 findings\)\s+TEST\s+P$/,
    );
    expect(text.stdout).toMatch(/^findings per run\s+2\.00 \(p50 2\)\s+2\.00 \(p50 2\)\s+mann_whitney/m);
    expect(text.stdout).toMatch(
      /^resolved with a change\s+25\.0% \[4\.6–69\.9\] \(1\/4\)\s+25\.0% \[4\.6–69\.9\] \(1\/4\)\s+fisher_exact\s+1\.0000$/m,
    );
    expect(text.stdout).toMatch(
      /^dismissed\s+25\.0% \[4\.6–69\.9\] \(1\/4\)\s+25\.0% \[4\.6–69\.9\] \(1\/4\)/m,
    );
    expect(text.stdout).toMatch(
      /^thumbed down\s+25\.0% \[4\.6–69\.9\] \(1\/4\)\s+25\.0% \[4\.6–69\.9\] \(1\/4\)/m,
    );
    expect(text.stdout).toMatch(/^on a live finding's lines\s+-\s+100\.0% \[51\.0–100\.0\] \(4\/4\)/m);
    expect(text.stdout).toContain(
      "not enough data yet: 2 paired runs of 3.1.0 and 3.2.0-next.1; each version needs at least 10",
    );

    const json = JSON.parse((await svc(["eval", "compare", "--shadow", "review", "--json"], env)).stdout);
    expect(json).toMatchObject({
      pipeline: "review",
      live: { version: "3.1.0", runs: 2, findings: 4 },
      candidate: { version: "3.2.0-next.1", runs: 2, findings: 4, sameLines: { count: 4, n: 4 } },
      tooSmall: true,
      shadowing: { live: { runs: 2 }, shadow: { runs: 2 } },
    });
    const signal = (name: string) => json.signals.find((s: { name: string }) => s.name === name);
    expect(signal("resolved_with_change")).toMatchObject({
      live: { count: 1, n: 4, interval: { low: expect.closeTo(0.0456, 3), high: expect.closeTo(0.6994, 3) } },
      candidate: { count: 1, n: 4 },
      test: "fisher_exact",
      p: 1,
      significant: null,
    });
    expect(signal("dismissed")).toMatchObject({ live: { count: 1, n: 4 }, candidate: { count: 1, n: 4 } });
    expect(signal("thumbed_down")).toMatchObject({ live: { count: 1, n: 4 }, candidate: { count: 1, n: 4 } });
    const findingsPerRun = json.perRun.find((m: { name: string }) => m.name === "findings");
    expect(findingsPerRun).toMatchObject({ live: { n: 2, mean: 2 }, candidate: { n: 2, mean: 2 } });
  });

  it("--shadow cannot be combined with cohorts, and says so", async () => {
    const refused = await svc(["eval", "compare", "--shadow", "review", "--a", "version:3.1.0"], {
      HOME: home,
      SVC_DAEMON_URL: bed.url,
    });
    expect(refused.code).toBe(2);
    expect(refused.stderr.replace(/\s+›?\s*/g, " ")).toContain(
      "--shadow compares a pipeline's live version with its shadow candidate and names the pipeline itself: leave out --a",
    );
    const api = await fetch(`${bed.url}/evals/compare?shadow=review&b=version:3.1.0`);
    expect(api.status).toBe(400);
    expect(JSON.stringify(await api.json())).toContain('cannot be combined with \\"b\\"');
  });
});
