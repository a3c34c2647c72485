// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} is the configuration substitution syntax
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import pg from "pg";
import { installPinnedCli } from "../../support/agent-clis.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { testGit } from "../../support/git.ts";
import { type GitHost, gitHost } from "../../support/git-smart-http.ts";
import { FakeAnthropic } from "../agents/fake-anthropic.ts";
import { FakeResponses } from "../agents/fake-responses.ts";
import { FakeModelApi } from "../worker/fake-model-api.ts";
import { type RoleProcess, startIngress, startWorkerProcess, writeConfigDir } from "../worker/processes.ts";
import { type FakeGitHub, startFakeGitHub } from "./fake-github.ts";
import { PR_PAYLOAD, postSignedDelivery } from "./pull-request.ts";

const COMMENT = JSON.parse(
  readFileSync(
    join(
      import.meta.dirname,
      "../../../ingress/webhooks/codehost/fixtures/issue_comment/created.payload.json",
    ),
    "utf8",
  ),
) as { issue: Record<string, unknown>; comment: Record<string, unknown> };

/**
 * A real ingress and worker, the loopback GitHub with a real repository over smart HTTP on its
 * origin (`acme/widgets`, read with the default identity's token), for the review tests of issue
 * 56: large pull requests, partial results and rules per path. Each agent leaves its prompt in
 * `out/<invocation>/prompt` and answers what the test wrote to `out/<pipeline>.json` beforehand;
 * the `claude` target is the pinned Claude Code talking to the loopback Anthropic API, whose
 * model the test scripts with `CLAUDE_KEY`.
 */
export const REPO = "acme/widgets";
export const CODEHOST_TOKEN = "ghs_reviewRulesIdentity0001";
/** the `claude` target's credential: the key the scripted model answers */
export const CLAUDE_KEY = "sk-ant-review-rules-0001";
/** the `claude-slow` target's credential (no turn limit, a timeout instead) */
export const CLAUDE_SLOW_KEY = "sk-ant-review-rules-0002";
/** the `gpt` target's credential (the `openai` runtime, max_turns 5): the key the loopback model answers */
export const OPENAI_KEY = "sk-review-rules-openai-0001";
/** the `codex-slow` target's credential (the pinned Codex, a 20s timeout): the key the loopback Responses API answers */
export const CODEX_KEY = "sk-review-rules-codex-0001";
/** what a file outside the worktree holds, linked from RUN_DIR by the `partial` pipeline's setup step */
export const RUN_DIR_CANARY = "svc-canary-beside-run-dir-5e1a";
const MEMBER_TOKEN = "ghp_reviewRulesMember0001";
const SECRET = "e2e-review-rules-secret";

const AGENT = `#!/bin/sh
d="$OUT/$(basename "$(dirname "$RUN_DIR")")"
mkdir -p "$d"
cat > "$d/prompt"
cat "$OUT/$RESULT.json"
`;

const REVIEW_OUTPUT = `result:
  schema:
    type: object
    properties:
      review: { $ref: svc://schemas/codehost/review/v1 }
    required: [review]
`;

/** pipeline name → the pull_request action it runs on, its target and what else it sets */
const PIPELINES: Record<string, { on: string; target: string; extra: string }> = {
  rules: {
    on: "pull_request.opened",
    target: "agent",
    extra: `review:
  paths:
    - { path: "db/**", instructions: "PIPELINE-DB-RULE: every migration must be reversible." }
    - { path: "docs/**", instructions: "PIPELINE-DOCS-RULE: check the links." }
    - { path: "**/*.snap", ignore: true }
outputs:
  review: { handler: codehost.review }
`,
  },
  large: {
    on: "pull_request.reopened",
    target: "agent",
    extra: `review:
  max_changed_lines: 20000
outputs:
  review: { handler: codehost.review, sticky: true, progress: true }
`,
  },
  // the same limit, counted from the mirror's diff (a comment's payload states none), asked for by a comment
  command: {
    on: "{ command: review }",
    target: "agent",
    extra: `review:
  max_changed_lines: 5
outputs:
  review: { handler: codehost.review, sticky: true }
`,
  },
  // the setup step (the repository's code) links a file outside the worktree into RUN_DIR, which
  // the review's agent may read and write its result so far in
  partial: {
    on: "pull_request.edited",
    target: "claude",
    extra: `setup:
  - run: ln -s "$OUT/canary.txt" "$RUN_DIR/leak"
outputs:
  review: { handler: codehost.review }
`,
  },
  // the openai runtime has no file tools: it keeps its result so far with keep_result_so_far
  "partial-openai": {
    on: "pull_request.labeled",
    target: "gpt",
    extra: `outputs:
  review: { handler: codehost.review }
`,
  },
  // Codex's permission profile leaves RUN_DIR unwritable: it keeps its result so far with the tool
  "partial-codex": {
    on: "pull_request.unlabeled",
    target: "codex-slow",
    extra: `outputs:
  review: { handler: codehost.review }
`,
  },
  "partial-timeout": {
    on: "pull_request.synchronize",
    target: "claude-slow",
    extra: `outputs:
  review: { handler: codehost.review }
`,
  },
};

export interface ReviewBed {
  github: FakeGitHub;
  /** the model API of the `claude` target: script it with `behave(CLAUDE_KEY, …)` */
  anthropic: FakeAnthropic;
  /** the model API of the `gpt` target: script it with `answer(OPENAI_KEY, …)` */
  model: FakeModelApi;
  /** the Responses API of the `codex-slow` target: script it with `behave(CODEX_KEY, …)` */
  responses: FakeResponses;
  pool: pg.Pool;
  out: string;
  /** commits `files` in the work tree (a null text removes the file); the commit */
  commit(files: Record<string, string | null>, message: string): string;
  push(sha: string, ref: string): void;
  git0(args: string[]): string;
  /** what the command agent of `pipeline` answers */
  answer(pipeline: string, result: unknown): Promise<void>;
  /** the pull request as `GET /repos/.../pulls/{n}` answers it (dispatch reads a comment's pull request) */
  host(pull: { number: number; head: string; base: string }): void;
  /** a member's comment on pull request `number`, made on the loopback GitHub and delivered; the trigger id */
  comment(number: number, body: string): Promise<string>;
  /** a signed pull_request delivery by a member; the trigger id */
  deliver(
    action: string,
    pull: { number: number; head: string; base: string; additions?: number; deletions?: number },
  ): Promise<string>;
  stop(): Promise<void>;
}

export async function startReviewBed(adminDatabaseUrl: string): Promise<ReviewBed> {
  const claude = await installPinnedCli("claude-code");
  const codex = await installPinnedCli("codex");
  const anthropic = new FakeAnthropic();
  await anthropic.start();
  const model = new FakeModelApi();
  await model.start();
  const responses = new FakeResponses();
  await responses.start();
  const database: TestDatabase = await createTestDatabase(adminDatabaseUrl);
  const git: GitHost = gitHost({ authorize: (token) => (token === CODEHOST_TOKEN ? true : "unknown") });
  const pulls: Record<string, unknown>[] = [];
  const github = await startFakeGitHub({
    users: { [CODEHOST_TOKEN]: "svc-bot", [MEMBER_TOKEN]: "octo-member" },
    git,
    repos: { [REPO]: { repository: { full_name: REPO, private: true, default_branch: "main" }, pulls } },
  });
  const work = await mkdtemp(join(tmpdir(), "svc-e2e-review-work-"));
  const out = await mkdtemp(join(tmpdir(), "svc-e2e-review-out-"));
  const run = testGit(work);
  run(["init", "--quiet", "--initial-branch=main", work]);
  git.createRepo(REPO, { private: true });
  writeFileSync(join(out, "canary.txt"), `${RUN_DIR_CANARY}\n`);
  const pipelines = Object.fromEntries(
    Object.entries(PIPELINES).map(([name, p]) => [
      `pipelines/${name}.yaml`,
      `version: 1.0.0
agent: bot
trigger:
  codehost: [${p.on}]
authors: [owner, member, collaborator, contributor, first_time_contributor, none]
targets: [${p.target}]
env:
  OUT: ${out}
  RESULT: ${name}
instructions: Review the pull request.
${REVIEW_OUTPUT}${p.extra}`,
    ]),
  );
  const dir = await writeConfigDir(
    {
      "daemon.yaml": `webhooks:
  sources:
    github: { verify: codehost, secret: "\${GITHUB_SECRET}" }
targets:
  agent: { runtime: command, command: ["./bin/agent"], timeout: 60s }
  claude:
    runtime: claude-code
    model: claude-sonnet-4-5
    base_url: ${anthropic.url}
    bin: ${claude}
    max_turns: 3
    timeout: 60s
    credentials: [{ name: main, secret: "\${CLAUDE_KEY}" }]
  claude-slow:
    runtime: claude-code
    model: claude-sonnet-4-5
    base_url: ${anthropic.url}
    bin: ${claude}
    timeout: 20s
    credentials: [{ name: main, secret: "\${CLAUDE_SLOW_KEY}" }]
  gpt:
    runtime: openai
    model: test-model
    base_url: ${model.url}
    max_turns: 5
    timeout: 60s
    credentials: [{ name: main, secret: "\${OPENAI_KEY}" }]
  codex-slow:
    runtime: codex
    model: gpt-5
    base_url: ${responses.url}/v1
    bin: ${codex}
    timeout: 20s
    credentials: [{ name: main, secret: "\${CODEX_KEY}" }]
ask:
  targets: [agent]
repos:
  ${REPO}: {}
codehost:
  api_url: ${github.url}
  token: "\${CODEHOST_TOKEN}"
  bot_name: svc-bot
`,
      "agents/bot/PERSONA.md": "---\nname: bot\ndescription: Reviews.\n---\nYou review.\n",
      "bin/agent": AGENT,
      ...pipelines,
    },
    ["bin/agent"],
  );
  const env = {
    SVC_CONFIG_DIR: dir,
    SVC_DATABASE_URL: database.url,
    GITHUB_SECRET: SECRET,
    CODEHOST_TOKEN,
    CLAUDE_KEY,
    CLAUDE_SLOW_KEY,
    OPENAI_KEY,
    CODEX_KEY,
  };
  const { role: ingress, url } = await startIngress(env);
  let worker: RoleProcess;
  try {
    // the agents reach svc's tools (keep_result_so_far) at the ingress
    worker = await startWorkerProcess({ ...env, SVC_DAEMON_URL: url });
  } catch (error) {
    await ingress.stop();
    throw error;
  }
  const pool = new pg.Pool({ connectionString: database.url, max: 2 });
  const post = async (event: string, payload: unknown) => {
    const response = await postSignedDelivery(url, SECRET, event, payload);
    if (response.status !== 202)
      throw new Error(`the ingress answered ${response.status}: ${await response.text()}`);
    return ((await response.json()) as { trigger: string }).trigger;
  };
  return {
    github,
    anthropic,
    model,
    responses,
    pool,
    out,
    host(pull) {
      pulls.push({
        number: pull.number,
        state: "open",
        head: { ref: "feature", sha: pull.head, repo: { full_name: REPO } },
        base: { ref: "main", sha: pull.base, repo: { full_name: REPO } },
      });
    },
    async comment(number, body) {
      const made = await fetch(`${github.url}/repos/${REPO}/issues/${number}/comments`, {
        method: "POST",
        headers: { authorization: `token ${MEMBER_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ body }),
      });
      const posted = (await made.json()) as { id: number; user: { login: string } };
      return post("issue_comment", {
        ...COMMENT,
        repository: { ...PR_PAYLOAD.repository, full_name: REPO },
        issue: {
          ...COMMENT.issue,
          number,
          pull_request: { url: `${github.url}/repos/${REPO}/pulls/${number}` },
        },
        comment: { ...COMMENT.comment, id: posted.id, body, user: posted.user, author_association: "MEMBER" },
      });
    },
    git0: (args) => run(args, work),
    commit(files, message) {
      for (const [path, text] of Object.entries(files)) {
        if (text === null) {
          run(["rm", "--quiet", path], work);
          continue;
        }
        mkdirSync(dirname(join(work, path)), { recursive: true });
        writeFileSync(join(work, path), text);
      }
      run(["add", "--all"], work);
      run(["commit", "--quiet", "-m", message], work);
      return run(["rev-parse", "HEAD"], work);
    },
    push(sha, ref) {
      run(["push", "--quiet", "--force", git.pathOf(REPO), `${sha}:${ref}`], work);
    },
    answer: (pipeline, result) => writeFile(join(out, `${pipeline}.json`), JSON.stringify(result)),
    async deliver(action, pull) {
      const [owner, name] = REPO.split("/");
      const repository = { ...PR_PAYLOAD.repository, full_name: REPO, name, owner: { login: owner } };
      const source = PR_PAYLOAD as unknown as { pull_request: Record<string, unknown> };
      const payload = {
        ...PR_PAYLOAD,
        action,
        number: pull.number,
        repository,
        pull_request: {
          ...source.pull_request,
          number: pull.number,
          author_association: "MEMBER",
          additions: pull.additions ?? 3,
          deletions: pull.deletions ?? 1,
          head: { ref: "feature", sha: pull.head, repo: { full_name: REPO } },
          base: { ref: "main", sha: pull.base, repo: { full_name: REPO } },
        },
      };
      return post("pull_request", payload);
    },
    async stop() {
      await worker.stop();
      await ingress.stop();
      await pool.end();
      await database.drop();
      await github.close();
      await anthropic.stop();
      await model.stop();
      await responses.stop();
      git.close();
      for (const path of [dir, out, work]) await rm(path, { recursive: true, force: true });
    },
  };
}
