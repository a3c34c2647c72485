// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} is the configuration substitution syntax
import { mkdirSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
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
import { FakeModelApi } from "../worker/fake-model-api.ts";
import { type RoleProcess, startIngress, startWorkerProcess, writeConfigDir } from "../worker/processes.ts";

/**
 * Issue 57, backtests on replayed model answers: the live version of a pipeline with
 * `record_answers: true` reviewed three pull requests through the worker's gateway, on an `openai`
 * target whose loopback model flags the line the pipeline's instructions name (the live version's:
 * 25). The candidate's instructions name line 10. `svc eval backtest --replay-answers` runs the
 * candidate with the gateway answering from the live runs' recordings: the model API gets no
 * request, the candidate's findings are what the recorded answers said (line 25), and the report
 * says the answers were replayed, every call diverged (its prompt differs). Without the flag the
 * model is called and the candidate finds line 10.
 */
const REPO = "acme/widgets";
const CODEHOST_TOKEN = "ghs_backtestReplayIdentity01";
const MODEL_KEY = "sk-backtest-replay-0001";
const SECRET = "e2e-backtest-replay-secret";
const PULLS = 3;

function pipeline(version: string, line: number, extra = ""): string {
  return `version: ${version}
agent: bot
trigger:
  codehost: [pull_request.opened]
authors: [owner, member, collaborator, contributor, first_time_contributor, none]
targets: [model]
instructions: Review the pull request. Flag line ${line}.
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

/** The model: one review flagging the line the instructions name, on the file of the pull request in the event. */
function review(body: Record<string, unknown>): Record<string, unknown> {
  const text = JSON.stringify(body.messages);
  const line = Number(/Flag line (\d+)/.exec(text)?.[1] ?? 1);
  const number = /\\"number\\": (\d+)/.exec(text)?.[1] ?? "0";
  const comment = { path: `src/p${number}.js`, line, body: `line ${line} reads an unchecked value` };
  return {
    role: "assistant",
    content: JSON.stringify({ review: { event: "COMMENT", body: "review", comments: [comment] } }),
  };
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

interface Comment {
  path: string;
  line: number;
}

describe("svc eval backtest --replay-answers answers the candidate with the live runs' recorded model answers", () => {
  let database: TestDatabase;
  let git: GitHost;
  let github: FakeGitHub;
  const model = new FakeModelApi();
  let ingress: RoleProcess;
  let worker: RoleProcess;
  let pool: pg.Pool;
  let url: string;
  let dir: string;
  let work: string;
  let home: string;
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

  /** The review comments of each of a backtest's candidate runs, by pull request number. */
  const candidateComments = async (backtest: string) => {
    const { rows } = await pool.query<{
      number: number;
      status: string;
      result: { review: { comments: Comment[] } };
    }>(
      `SELECT (t.payload->'pull_request'->>'number')::int AS number, i.status, i.result
         FROM svc.triggers t JOIN svc.workloads w ON w.trigger_id = t.id JOIN svc.invocations i ON i.workload_id = w.id
        WHERE t.backtest_id = $1 AND i.shadow ORDER BY number`,
      [backtest],
    );
    return rows.map((row) => ({
      number: row.number,
      status: row.status,
      comments: row.result?.review.comments.map(({ path, line }) => ({ path, line })),
    }));
  };

  const backtest = async (...flags: string[]) => {
    const ran = await svc(
      [
        "eval",
        "backtest",
        "review",
        "--version-file",
        "pipelines/review.next.yaml",
        "--pulls",
        `${REPO}#1..#${PULLS}`,
        "--poll-ms",
        "200",
        ...flags,
      ],
      { HOME: home, SVC_DAEMON_URL: url },
    );
    expect(ran.code, ran.stderr).toBe(0);
    const id = /^(bkt_[a-z2-7]+): review 1\.1\.0-next\.1 replaying on 3 merged pull requests/m.exec(
      ran.stdout,
    )?.[1];
    expect(id, ran.stdout).toBeDefined();
    expect(ran.stdout).toMatch(new RegExp(`^${PULLS}/${PULLS} done$`, "m"));
    return { id: id!, stdout: ran.stdout };
  };

  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    await model.start();
    model.answer(MODEL_KEY, { status: 200, reply: review });
    git = gitHost({ authorize: (token) => (token === CODEHOST_TOKEN ? true : "unknown") });
    github = await startFakeGitHub({
      users: { [CODEHOST_TOKEN]: "svc-bot" },
      git,
      repos: {
        [REPO]: { repository: { full_name: REPO, private: true, default_branch: "main" }, pulls: [] },
      },
    });
    work = await mkdtemp(join(tmpdir(), "svc-e2e-replay-work-"));
    home = await mkdtemp(join(tmpdir(), "svc-e2e-replay-home-"));
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

    dir = await writeConfigDir({
      "daemon.yaml": `webhooks:
  sources:
    github: { verify: codehost, secret: "\${GITHUB_SECRET}" }
targets:
  model:
    runtime: openai
    base_url: ${model.url}
    model: test-model
    timeout: 60s
    credentials: [{ name: a, secret: ${MODEL_KEY} }]
  local: { runtime: command, command: [/bin/cat] }
ask:
  targets: [local]
repos:
  ${REPO}: {}
codehost:
  api_url: ${github.url}
  token: "\${CODEHOST_TOKEN}"
  bot_name: svc-bot
worker:
  concurrency: 3
`,
      "agents/bot/PERSONA.md": "---\nname: bot\ndescription: Reviews.\n---\nYou review.\n",
      // the live version records its model answers; the candidate (share 0: backtests only) differs in its prompt
      "pipelines/review.yaml": pipeline(
        "1.0.0",
        25,
        "record_answers: true\nshadow: { version_file: pipelines/review.next.yaml, share: 0 }\n",
      ),
      "pipelines/review.next.yaml": pipeline("1.1.0-next.1", 10),
    });
    const env = {
      SVC_CONFIG_DIR: dir,
      SVC_DATABASE_URL: database.url,
      GITHUB_SECRET: SECRET,
      CODEHOST_TOKEN,
    };
    ({ role: ingress, url } = await startIngress(env));
    worker = await startWorkerProcess(env);
    pool = new pg.Pool({ connectionString: database.url, max: 2 });

    const triggers: string[] = [];
    for (const [n, head] of heads) triggers.push(await deliver("opened", n, head.opened, main));
    await waitFor(async () => {
      const { rows } = await pool.query(
        "SELECT count(*)::int AS n FROM svc.triggers WHERE id = ANY($1) AND status IN ('completed', 'error')",
        [triggers],
      );
      return rows[0].n === PULLS;
    }, "the live reviews of the pull requests to end");
    for (const [n, head] of heads) await deliver("closed", n, head.merged, main, true);
  }, 240_000);

  afterAll(async () => {
    await worker?.stop();
    await ingress?.stop();
    await pool?.end();
    await database?.drop();
    await github?.close();
    await model.stop();
    git?.close();
    for (const path of [dir, work, home]) if (path) await rm(path, { recursive: true, force: true });
  });

  it("records the live runs' answers, then replays them to the candidate without calling the model", async () => {
    // the live reviews flagged line 25, each from one model call the gateway recorded
    const { rows: live } = await pool.query<{
      id: string;
      status: string;
      result: { review: { comments: Comment[] } };
    }>("SELECT i.id, i.status, i.result FROM svc.invocations i WHERE NOT i.shadow ORDER BY i.created_at");
    expect(live.map((row) => row.status)).toEqual(Array(PULLS).fill("completed"));
    expect(live.map((row) => row.result.review.comments.map((c) => c.line))).toEqual(Array(PULLS).fill([25]));
    const { rows: recorded } = await pool.query(
      `SELECT invocation_id, call, api, path, target, status, complete, headers, convert_from(body, 'UTF8') AS body
         FROM svc.recorded_answers ORDER BY created_at`,
    );
    expect(recorded.map((row) => row.invocation_id).sort()).toEqual(live.map((row) => row.id).sort());
    for (const row of recorded) {
      expect(row).toMatchObject({
        call: 1,
        api: "openai",
        path: "/v1/chat/completions",
        target: "model",
        status: 200,
        complete: true,
      });
      expect(JSON.parse(row.body).choices[0].message.content).toContain('"line":25');
      // the request's credential is never recorded
      expect(JSON.stringify(row)).not.toContain(MODEL_KEY);
    }

    const before = model.requests.length;
    const { id, stdout } = await backtest("--replay-answers");
    // the model API got nothing: every candidate call was answered from the recording
    expect(model.requests.slice(before)).toEqual([]);
    // the candidate's instructions name line 10; its findings are what the recorded answers said
    expect(await candidateComments(id)).toEqual(
      [...heads.keys()].map((number) => ({
        number,
        status: "completed",
        comments: [{ path: `src/p${number}.js`, line: 25 }],
      })),
    );
    // one call each, answered from the recording though its prompt differs: diverged
    expect(stdout).toMatch(/model answers replayed from the live runs/);
    for (const n of heads.keys())
      expect(stdout).toMatch(
        new RegExp(`^acme/widgets#${n}\\s.*\\sreplayed 1/1 \\(diverged 1, missing 0\\)$`, "m"),
      );
    const shown = await svc(["eval", "backtest", id, "--json"], { HOME: home, SVC_DAEMON_URL: url });
    const report = JSON.parse(shown.stdout);
    expect(report.backtest.replayAnswers).toBe(true);
    expect(report.items.map((item: { answers: unknown }) => item.answers)).toEqual(
      Array(PULLS).fill({ recorded: 1, replayed: 1, diverged: 1, missing: 0 }),
    );
    // a replayed call is not charged: the candidate's tasks used nothing
    const { rows: usage } = await pool.query(
      `SELECT k.usage FROM svc.tasks k JOIN svc.invocations i ON i.id = k.invocation_id
        JOIN svc.workloads w ON w.id = i.workload_id JOIN svc.triggers t ON t.id = w.trigger_id
       WHERE t.backtest_id = $1 AND k.kind = 'agent'`,
      [id],
    );
    expect(usage.map((row) => row.usage)).toEqual(Array(PULLS).fill(null));
    // and nothing of a candidate run is recorded in turn
    const { rows: count } = await pool.query("SELECT count(*)::int AS n FROM svc.recorded_answers");
    expect(count[0].n).toBe(PULLS);
  }, 300_000);

  it("without --replay-answers the candidate calls the model, which follows its instructions", async () => {
    const before = model.requests.length;
    const { id, stdout } = await backtest();
    expect(model.requests.length - before).toBe(PULLS);
    expect(stdout).not.toMatch(/replayed/);
    expect(await candidateComments(id)).toEqual(
      [...heads.keys()].map((number) => ({
        number,
        status: "completed",
        comments: [{ path: `src/p${number}.js`, line: 10 }],
      })),
    );
  }, 300_000);

  it("refuses replay_answers that is not a boolean, and a replay of events without recorded answers", async () => {
    const env = { HOME: home, SVC_DAEMON_URL: url };
    // the API as the CLI calls it, from loopback
    const notBoolean = await fetch(`${url}/evals/backtests`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        pipeline: "review",
        version_file: "pipelines/review.next.yaml",
        last: "30d",
        replay_answers: "yes",
      }),
    });
    expect(notBoolean.status).toBe(400);
    expect(await notBoolean.text()).toContain('\\"replay_answers\\" must be true or false');
    await pool.query("DELETE FROM svc.recorded_answers");
    const none = await svc(
      [
        "eval",
        "backtest",
        "review",
        "--version-file",
        "pipelines/review.next.yaml",
        "--last",
        "30d",
        "--replay-answers",
      ],
      env,
    );
    expect(none.code).toBe(1);
    expect(none.stderr.replace(/\s*›\s*/g, " ").replace(/\s+/g, " ")).toContain(
      "no live run of pipeline review recorded its model answers",
    );
  }, 120_000);
});
