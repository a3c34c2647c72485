// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} is the configuration substitution syntax
import { mkdirSync, writeFileSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { testGit } from "../../support/git.ts";
import { type GitHost, gitHost } from "../../support/git-smart-http.ts";
import { waitFor } from "../../support/wait-for.ts";
import { svc } from "../cli/support.ts";
import { type FakeGitHub, startFakeGitHub } from "../outputs/fake-github.ts";
import { PR_PAYLOAD, postSignedDelivery } from "../outputs/pull-request.ts";
import { type RoleProcess, startIngress, startWorkerProcess, writeConfigDir } from "../worker/processes.ts";

/**
 * Issue 57, backtests: ten pull requests were opened (svc recorded their deliveries, the live
 * version reviewed each), then fixed by a later commit on line 10 of their file, commented on by a
 * member (on line 11 of the odd ones) and merged. `svc eval backtest` replays the candidate version
 * on each at the head it was opened with: ten held runs, each checked out at that old head, nothing
 * written to GitHub, and a comparison whose numbers follow from what the two versions found (the
 * candidate lines 10 and 25, the live version line 25).
 */
const REPO = "acme/widgets";
const CODEHOST_TOKEN = "ghs_backtestIdentity0001";
const SECRET = "e2e-backtest-secret";
const PULLS = 10;

/** records the head the run checked out and the files its pull request changed */
const SETUP = [
  'd="$OUT/$(basename "$(dirname "$RUN_DIR")")"',
  'mkdir -p "$d"',
  'git -C "$WORKTREE" rev-parse HEAD > "$d/head"',
  'git -C "$WORKTREE" diff --name-only "$BASE_SHA...HEAD" > "$d/diff"',
].join("; ");

/** a review with one finding per line of $FINDINGS, on the file the pull request added */
const AGENT = `#!/bin/sh
cat > /dev/null
d="$OUT/$(basename "$(dirname "$RUN_DIR")")"
f=$(head -n 1 "$d/diff")
c=""
for l in $FINDINGS; do c="$c\${c:+,}{\\"path\\":\\"$f\\",\\"line\\":$l,\\"body\\":\\"$WHO: line $l\\"}"; done
echo "{\\"review\\":{\\"event\\":\\"COMMENT\\",\\"body\\":\\"$WHO review\\",\\"comments\\":[$c]}}"
`;

function pipeline(out: string, version: string, who: string, findings: string, extra = ""): string {
  return `version: ${version}
agent: bot
trigger:
  codehost: [pull_request.opened]
authors: [owner, member, collaborator, contributor, first_time_contributor, none]
targets: [agent]
env:
  OUT: ${out}
  WHO: ${who}
  FINDINGS: "${findings}"
setup:
  - run: ${JSON.stringify(SETUP)}
instructions: Review the pull request.
result:
  schema:
    type: object
    properties:
      review: { $ref: svc://schemas/codehost/review/v1 }
    required: [review]
outputs:
  review: { handler: codehost.review }
${extra}`;
}

const fileText = (n: number, fixed = false) =>
  Array.from({ length: 30 }, (_, i) =>
    i === 29
      ? `export const name = "p${n}";`
      : fixed && i === 9
        ? "const v10 = checked(10);"
        : `const v${i + 1} = ${i + 1};`,
  )
    .join("\n")
    .concat("\n");

describe("svc eval backtest replays a candidate on ten merged pull requests at their old heads", () => {
  let database: TestDatabase;
  let git: GitHost;
  let github: FakeGitHub;
  let ingress: RoleProcess;
  let worker: RoleProcess;
  let pool: pg.Pool;
  let url: string;
  let dir: string;
  let out: string;
  let work: string;
  let home: string;
  /** pull request number → the head it was opened with, and its head when merged */
  const heads = new Map<number, { opened: string; merged: string }>();

  const deliver = async (action: string, number: number, head: string, base: string, merged = false) => {
    const [owner, name] = REPO.split("/");
    const source = PR_PAYLOAD as unknown as { pull_request: Record<string, unknown> };
    const payload = {
      ...PR_PAYLOAD,
      action,
      number,
      repository: { ...PR_PAYLOAD.repository, full_name: REPO, name, owner: { login: owner } },
      pull_request: {
        ...source.pull_request,
        number,
        state: action === "closed" ? "closed" : "open",
        merged,
        author_association: "MEMBER",
        head: { ref: `pr-${number}`, sha: head, repo: { full_name: REPO } },
        base: { ref: "main", sha: base, repo: { full_name: REPO } },
      },
    };
    const response = await postSignedDelivery(url, SECRET, "pull_request", payload);
    expect(response.status, await response.clone().text()).toBe(202);
    return ((await response.json()) as { trigger: string }).trigger;
  };

  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    git = gitHost({ authorize: (token) => (token === CODEHOST_TOKEN ? true : "unknown") });
    github = await startFakeGitHub({
      users: { [CODEHOST_TOKEN]: "svc-bot" },
      git,
      repos: {
        [REPO]: { repository: { full_name: REPO, private: true, default_branch: "main" }, pulls: [] },
      },
    });
    work = await mkdtemp(join(tmpdir(), "svc-e2e-backtest-work-"));
    out = await mkdtemp(join(tmpdir(), "svc-e2e-backtest-out-"));
    home = await mkdtemp(join(tmpdir(), "svc-e2e-backtest-home-"));
    const run = testGit(work);
    git.createRepo(REPO, { private: true });
    run(["init", "--quiet", "--initial-branch=main", work]);
    const commit = (path: string, text: string, message: string) => {
      mkdirSync(dirname(join(work, path)), { recursive: true });
      writeFileSync(join(work, path), text);
      run(["add", "--all"], work);
      run(["commit", "--quiet", "-m", message], work);
      return run(["rev-parse", "HEAD"], work);
    };
    const main = commit("README.md", "widgets\n", "start");
    run(["push", "--quiet", git.pathOf(REPO), "main:refs/heads/main"], work);
    for (let n = 1; n <= PULLS; n += 1) {
      run(["checkout", "--quiet", "-b", `pr-${n}`, main], work);
      const opened = commit(`src/p${n}.js`, fileText(n), `add p${n}`);
      const merged = commit(`src/p${n}.js`, fileText(n, true), `fix line 10 of p${n}`);
      run(
        [
          "push",
          "--quiet",
          git.pathOf(REPO),
          `${merged}:refs/heads/pr-${n}`,
          `${merged}:refs/pull/${n}/head`,
        ],
        work,
      );
      heads.set(n, { opened, merged });
      // the diff GitHub shows for the pull request: its added file (where a review's comments land)
      github.files.set(`${REPO}#${n}`, [
        {
          filename: `src/p${n}.js`,
          status: "added",
          patch: `@@ -0,0 +1,30 @@\n${fileText(n, true)
            .trimEnd()
            .split("\n")
            .map((line) => `+${line}`)
            .join("\n")}`,
        },
      ]);
    }
    run(["checkout", "--quiet", "main"], work);

    dir = await writeConfigDir(
      {
        "daemon.yaml": `webhooks:
  sources:
    github: { verify: codehost, secret: "\${GITHUB_SECRET}" }
targets:
  agent: { runtime: command, command: ["./bin/agent"], timeout: 60s }
ask:
  targets: [agent]
repos:
  ${REPO}: {}
codehost:
  api_url: ${github.url}
  token: "\${CODEHOST_TOKEN}"
  bot_name: svc-bot
worker:
  concurrency: 4
`,
        "agents/bot/PERSONA.md": "---\nname: bot\ndescription: Reviews.\n---\nYou review.\n",
        "bin/agent": AGENT,
        // the live version finds line 25; its candidate (in the shadow of almost no live event) 10 and 25
        "pipelines/review.yaml": pipeline(
          out,
          "1.0.0",
          "live",
          "25",
          "shadow: { version_file: pipelines/review.next.yaml, share: 0.0001 }\n",
        ),
        "pipelines/review.next.yaml": pipeline(out, "1.1.0-next.1", "candidate", "10 25"),
      },
      ["bin/agent"],
    );
    const env = {
      SVC_CONFIG_DIR: dir,
      SVC_DATABASE_URL: database.url,
      GITHUB_SECRET: SECRET,
      CODEHOST_TOKEN,
    };
    ({ role: ingress, url } = await startIngress(env));
    worker = await startWorkerProcess(env);
    pool = new pg.Pool({ connectionString: database.url, max: 2 });

    // what happened then: each pull request opened (the live version reviews it), fixed, commented, merged
    const triggers: string[] = [];
    for (const [n, head] of heads) triggers.push(await deliver("opened", n, head.opened, main));
    await waitFor(async () => {
      const { rows } = await pool.query(
        "SELECT count(*)::int AS n FROM svc.triggers WHERE id = ANY($1) AND status IN ('completed', 'error')",
        [triggers],
      );
      return rows[0].n === PULLS;
    }, "the live reviews of the ten pull requests to end");
    for (const [n, head] of heads) {
      if (n % 2 === 1)
        github.reviewComment(`${REPO}#${n}`, {
          login: "octo-member",
          body: "this line reads the unchecked value",
          association: "MEMBER",
          path: `src/p${n}.js`,
          line: 11,
        });
      await deliver("closed", n, head.merged, main, true);
    }
  }, 240_000);

  afterAll(async () => {
    await worker?.stop();
    await ingress?.stop();
    await pool?.end();
    await database?.drop();
    await github?.close();
    git?.close();
    for (const path of [dir, out, work, home]) if (path) await rm(path, { recursive: true, force: true });
  });

  it("runs the candidate held at each old head, writes nothing to GitHub, and prints the comparison", async () => {
    // the live reviews were posted; from here on GitHub may only be read
    const { rows: live } = await pool.query(
      `SELECT i.status FROM svc.invocations i JOIN svc.workloads w ON w.id = i.workload_id WHERE NOT i.shadow`,
    );
    expect(live.map((row) => row.status)).toEqual(Array(PULLS).fill("completed"));
    const before = github.requests.length;

    const env = { HOME: home, SVC_DAEMON_URL: url };
    const ran = await svc(
      [
        "eval",
        "backtest",
        "review",
        "--version-file",
        "pipelines/review.next.yaml",
        "--pulls",
        `${REPO}#1..#10`,
        "--poll-ms",
        "200",
      ],
      env,
    );
    expect(ran.code, ran.stderr).toBe(0);
    const id = /^(bkt_[a-z2-7]+): review 1\.1\.0-next\.1 replaying on 10 merged pull requests/m.exec(
      ran.stdout,
    )?.[1];
    expect(id, ran.stdout).toBeDefined();
    expect(ran.stdout).toMatch(/^10\/10 done$/m);
    // the comparison as an operator sees it (quoted in issue 57's closing note)
    console.log(ran.stdout);

    // ten held runs of the candidate, one per pull request, each at the head it was opened with
    const { rows: runs } = await pool.query(
      `SELECT i.id, i.status, i.shadow, i.outputs_held, i.concurrency_group, w.pipeline, w.pipeline_version,
              (t.payload->'pull_request'->>'number')::int AS number
         FROM svc.triggers t JOIN svc.workloads w ON w.trigger_id = t.id JOIN svc.invocations i ON i.workload_id = w.id
        WHERE t.backtest_id = $1 ORDER BY number`,
      [id],
    );
    expect(runs.map(({ id: _, ...run }) => run)).toEqual(
      [...heads.keys()].map((number) => ({
        status: "completed",
        shadow: true,
        outputs_held: true,
        concurrency_group: null,
        pipeline: "review",
        pipeline_version: "1.1.0-next.1",
        number,
      })),
    );
    for (const run of runs) {
      const head = (await readFile(join(out, run.id, "head"), "utf8")).trim();
      expect(head, `the head run ${run.id} checked out`).toBe(heads.get(run.number)!.opened);
      expect(head).not.toBe(heads.get(run.number)!.merged);
    }
    const { rows: held } = await pool.query(
      "SELECT count(*)::int AS n FROM svc.artifacts WHERE invocation_id = ANY($1) AND name = 'held/outputs.md'",
      [runs.map((run) => run.id)],
    );
    expect(held[0].n).toBe(PULLS);

    // nothing written: no POST, PATCH, PUT or DELETE (a GraphQL query is a read, a mutation is not)
    const writes = github.requests
      .slice(before)
      .filter(
        (request) =>
          request.method !== "GET" &&
          !(request.path === "/graphql" && !/\bmutation\b/.test(JSON.stringify(request.body))),
      );
    expect(writes).toEqual([]);

    // per pull request: the candidate finds lines 10 and 25, the live version 25; line 10 was fixed
    // later, and a member commented on line 11 of the odd ones
    expect(ran.stdout).toMatch(
      /^acme\/widgets#1\s+[0-9a-f]{12}\s+completed\s+2\s+1\s+1\s+1\/1\s+1\s+0\s+0\s+0\/1$/m,
    );
    expect(ran.stdout).toMatch(
      /^acme\/widgets#2\s+[0-9a-f]{12}\s+completed\s+2\s+0\s+1\s+0\/0\s+1\s+0\s+0\s+0\/0$/m,
    );
    expect(ran.stdout).toMatch(
      /^1\.1\.0-next\.1 \(candidate\)\s+10\s+20\s+25\.0% \[\d+\.\d–\d+\.\d\] \(5\/20\)\s+50\.0% \[\d+\.\d–\d+\.\d\] \(10\/20\)\s+100\.0% \[\d+\.\d–100\.0\] \(5\/5\)$/m,
    );
    expect(ran.stdout).toMatch(
      /^1\.0\.0 \(live\)\s+10\s+10\s+0\.0% \[0\.0–\d+\.\d\] \(0\/10\)\s+0\.0% \[0\.0–\d+\.\d\] \(0\/10\)\s+0\.0% \[0\.0–\d+\.\d\] \(0\/5\)$/m,
    );

    // listed with the rest, so a backtest started with --no-wait can be found again
    const listed = await svc(["eval", "backtest"], env);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(
      new RegExp(`^${id} +review +1\\.1\\.0-next\\.1 +1\\.0\\.0 +\\S+ \\S+ +10/10 +10/10 *$`, "m"),
    );

    // the same backtest by id, as JSON
    const shown = await svc(["eval", "backtest", id!, "--json"], env);
    expect(shown.code, shown.stderr).toBe(0);
    const report = JSON.parse(shown.stdout);
    expect(report.done).toBe(PULLS);
    expect(report.items.map((item: { head: string; number: number }) => [item.number, item.head])).toEqual(
      [...heads.entries()].map(([n, head]) => [n, head.opened]).reverse(),
    );
    expect(report.totals.candidate).toMatchObject({
      pulls: PULLS,
      findings: 20,
      onHumanLines: { count: 5, n: 20, rate: 0.25 },
      onFixedLines: { count: 10, n: 20, rate: 0.5 },
      humanCommentsFound: { count: 5, n: 5, rate: 1 },
    });
    expect(report.totals.candidate.onFixedLines.interval.low).toBeCloseTo(0.2993, 3);
    expect(report.totals.candidate.onFixedLines.interval.high).toBeCloseTo(0.7007, 3);
    expect(report.totals.live).toMatchObject({ findings: 10, onFixedLines: { count: 0, n: 10 } });
  }, 300_000);

  it("refuses a candidate outside the pipelines directory or not loaded as the shadow, and an empty selection", async () => {
    const env = { HOME: home, SVC_DAEMON_URL: url };
    const backtest = (...args: string[]) => svc(["eval", "backtest", "review", ...args], env);
    // oclif wraps an error over lines that start with ›
    const said = (run: { stderr: string }) => run.stderr.replace(/\s*›\s*/g, " ").replace(/\s+/g, " ");
    const outside = await backtest("--version-file", "../../etc/review.yaml", "--last", "30d");
    expect(outside.code).toBe(1);
    expect(said(outside)).toContain("must name the candidate's file as pipelines/<file>.yaml");
    const absolute = await backtest("--version-file", `${dir}/pipelines/review.next.yaml`, "--last", "30d");
    expect(absolute.code).toBe(1);
    expect(said(absolute)).toContain("must name the candidate's file as pipelines/<file>.yaml");
    const live = await backtest("--version-file", "pipelines/review.yaml", "--last", "30d");
    expect(live.code).toBe(1);
    expect(said(live)).toContain("is not the candidate the daemon loaded for pipeline review");
    const none = await backtest("--version-file", "pipelines/review.next.yaml", "--pulls", `${REPO}#50..#60`);
    expect(none.code).toBe(1);
    expect(said(none)).toContain("svc recorded no merged pull request");
    const unknown = await svc(["eval", "backtest", "bkt_aaaaaaaaaaaaaaaaaaaa"], env);
    expect(unknown.code).toBe(1);
    expect(said(unknown)).toContain("no such backtest");
  }, 120_000);
});
