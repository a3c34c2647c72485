import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../../support/wait-for.ts";
import { svc } from "../cli/support.ts";
import type { FakeMergeRequest } from "./fake-gitlab.ts";
import {
  BASE,
  DEVELOPER,
  DIFF_V1,
  type GitlabBed,
  mergeRequestPayload,
  PEOPLE_TOKENS,
  PROJECT,
  project,
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
shadow: { version_file: pipelines/mr-review.next.yaml, share: 0 }
${OUTPUTS}`;
const CANDIDATE = `version: 2.1.0-next.1
trigger:
  codehost: [merge_request.open]
targets: [next-agent]
instructions: Review the merge request, naming the risk first.
${OUTPUTS}`;

/** an agent answering a review with one finding per line of src/app.js named */
const agent = (who: string, lines: number[]) => `#!/bin/sh
cat > /dev/null
echo '${JSON.stringify({
  review: {
    event: "COMMENT",
    body: `${who} review`,
    comments: lines.map((line) => ({ path: "src/app.js", line, body: `${who}: line ${line}` })),
  },
})}'
`;

const IIDS = [5, 6, 7];
const opened = (iid: number) => `${iid}`.repeat(40);
const merged = (iid: number) => `${iid}f`.repeat(20);
/** the later commit of each merge request: line 2 changed again */
const FIX = '@@ -1,3 +1,3 @@\n import x from "x";\n-let nm = 1;\n+let count = 1;\n export {};\n';

const request = (iid: number): FakeMergeRequest => ({
  iid,
  author_id: DEVELOPER.id,
  source_branch: `feature-${iid}`,
  target_branch: "main",
  diff_refs: { base_sha: BASE, start_sha: BASE, head_sha: opened(iid) },
  diffs: [{ old_path: "src/app.js", new_path: "src/app.js", diff: DIFF_V1 }],
});

/**
 * Issue 57's backtests on GitLab: three merge requests were opened (svc recorded the deliveries,
 * the live version reviewed each), a developer commented on line 2 of the first, a later commit
 * changed line 2 of each, and they were merged. `svc eval backtest` replays the candidate on each
 * at the head it was opened with, held: nothing written to GitLab, and a comparison with the
 * developer's notes (svc's own discussions left out) and GitLab's comparison of the two heads.
 */
describe("GitLab: svc eval backtest replays a candidate on merged merge requests", () => {
  let bed: GitlabBed;
  let home: string;

  beforeAll(async () => {
    bed = await startGitlabBed({
      agents: ["live-agent", "next-agent"],
      pipelines: { "mr-review": LIVE, "mr-review.next": CANDIDATE },
      // the live version finds line 21; the candidate lines 2 and 21
      scripts: { "live-agent": agent("live", [21]), "next-agent": agent("candidate", [2, 21]) },
      projects: [
        project({
          mergeRequests: IIDS.map(request),
          comparisons: IIDS.map((iid) => ({
            from: opened(iid),
            to: merged(iid),
            diffs: [{ old_path: "src/app.js", new_path: "src/app.js", diff: FIX }],
          })),
        }),
      ],
    });
    home = await mkdtemp(join(tmpdir(), "svc-gitlab-backtest-"));

    const triggers: string[] = [];
    for (const iid of IIDS)
      triggers.push(await bed.deliver(mergeRequestPayload({ sha: opened(iid), iid }), "Merge Request Hook"));
    await waitFor(async () => {
      const { rows } = await bed.pool.query(
        "SELECT count(*)::int AS n FROM svc.triggers WHERE id = ANY($1) AND status IN ('completed', 'error')",
        [triggers],
      );
      return rows[0].n === IIDS.length;
    }, "the live reviews of the three merge requests to end");
    // a developer's diff note on line 2 of merge request 5, as GitLab's page posts it
    const api = `${bed.gitlab.apiUrl}/projects/${encodeURIComponent(PROJECT)}/merge_requests/5/discussions`;
    const response = await fetch(api, {
      method: "POST",
      headers: { "content-type": "application/json", "private-token": PEOPLE_TOKENS.dev },
      body: JSON.stringify({
        body: "nm says nothing",
        position: {
          position_type: "text",
          base_sha: BASE,
          start_sha: BASE,
          head_sha: opened(5),
          old_path: "src/app.js",
          new_path: "src/app.js",
          new_line: 2,
        },
      }),
    });
    expect(response.status, await response.clone().text()).toBe(201);
    for (const iid of IIDS)
      await bed.deliver(
        mergeRequestPayload({ sha: merged(iid), iid, action: "merge" }),
        "Merge Request Hook",
      );
  }, 120_000);

  afterAll(async () => {
    await bed?.close();
    if (home) await rm(home, { recursive: true, force: true });
  });

  it("runs the candidate held at each old head, writes nothing to GitLab, and compares with the notes and later commits", async () => {
    const live = await bed.pool.query(
      "SELECT i.status FROM svc.invocations i JOIN svc.workloads w ON w.id = i.workload_id WHERE NOT i.shadow",
    );
    expect(live.rows.map((row) => row.status)).toEqual(IIDS.map(() => "completed"));
    const before = bed.gitlab.requests.length;

    const env = { HOME: home, SVC_DAEMON_URL: bed.url };
    const ran = await svc(
      [
        "eval",
        "backtest",
        "mr-review",
        "--version-file",
        "pipelines/mr-review.next.yaml",
        "--pulls",
        `${PROJECT}#5..#7`,
        "--poll-ms",
        "200",
      ],
      env,
    );
    expect(ran.code, ran.stderr).toBe(0);
    const id = /^(bkt_[a-z2-7]+): mr-review 2\.1\.0-next\.1 replaying on 3 merged/m.exec(ran.stdout)?.[1];
    expect(id, ran.stdout).toBeDefined();
    expect(ran.stdout).toMatch(/^3\/3 done$/m);
    expect(ran.stdout).toMatch(
      /^acme\/widgets#5\s+555555555555\s+completed\s+2\s+1\s+1\s+1\/1\s+1\s+0\s+0\s+0\/1$/m,
    );

    const { rows: runs } = await bed.pool.query(
      `SELECT i.status, i.shadow, i.outputs_held, w.pipeline_version,
              (t.payload->'object_attributes'->>'iid')::int AS iid
         FROM svc.triggers t JOIN svc.workloads w ON w.trigger_id = t.id JOIN svc.invocations i ON i.workload_id = w.id
        WHERE t.backtest_id = $1 ORDER BY iid`,
      [id],
    );
    expect(runs).toEqual(
      IIDS.map((iid) => ({
        status: "completed",
        shadow: true,
        outputs_held: true,
        pipeline_version: "2.1.0-next.1",
        iid,
      })),
    );
    // nothing written: every request since the backtest started is a read
    const writes = bed.gitlab.requests.slice(before).filter((request) => request.method !== "GET");
    expect(writes).toEqual([]);

    const shown = await svc(["eval", "backtest", id!, "--json"], env);
    expect(shown.code, shown.stderr).toBe(0);
    const report = JSON.parse(shown.stdout);
    expect(report.done).toBe(IIDS.length);
    expect(
      report.items
        .map((item: { number: number; head: string; finalHead: string }) => [
          item.number,
          item.head,
          item.finalHead,
        ])
        .sort(),
    ).toEqual(IIDS.map((iid) => [iid, opened(iid), merged(iid)]));
    // the candidate's line 2 was changed later on each and is near the developer's note on 5; the
    // live version's line 21 is neither (svc's own discussions there are no human comment)
    expect(report.totals.candidate).toMatchObject({
      pulls: 3,
      findings: 6,
      onHumanLines: { count: 1, n: 6 },
      onFixedLines: { count: 3, n: 6 },
      humanCommentsFound: { count: 1, n: 1 },
    });
    expect(report.totals.live).toMatchObject({
      pulls: 3,
      findings: 3,
      onHumanLines: { count: 0, n: 3 },
      onFixedLines: { count: 0, n: 3 },
      humanCommentsFound: { count: 0, n: 1 },
    });
  }, 120_000);
});
