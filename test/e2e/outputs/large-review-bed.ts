// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} is the configuration substitution syntax
import { mkdirSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import pg from "pg";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { testGit } from "../../support/git.ts";
import { type GitHost, gitHost } from "../../support/git-smart-http.ts";
import { FakeModelApi } from "../worker/fake-model-api.ts";
import { type RoleProcess, startIngress, startWorkerProcess, writeConfigDir } from "../worker/processes.ts";
import { type FakeGitHub, startFakeGitHub } from "./fake-github.ts";
import { PR_PAYLOAD, postSignedDelivery } from "./pull-request.ts";

/**
 * A real ingress and worker, the loopback GitHub with a real repository over smart HTTP
 * (`acme/gadgets`) and a loopback OpenAI-compatible model, for issue 56's large pull requests with
 * an orchestrator. Pipeline `split` is orchestrated: its orchestrator runs on the loopback model
 * (`planner`, answered by what the test scripts for the key `planner-key`), its tasks on `agent`, a
 * command agent that reports one finding on the first file its prompt lists. Pipeline `refused` has
 * the same limit and no orchestrator.
 */
export const REPO = "acme/gadgets";
const CODEHOST_TOKEN = "ghs_largeReviewIdentity0001";
const SECRET = "e2e-large-review-secret";
export const MAX_LINES = 10_000;
export const PLANNER_KEY = "planner-key";

/** a path-group task: the first file its instructions list gets one finding on its first line */
const TASK_AGENT = `#!/bin/sh
first=$(sed -n 's/^- \`\\([^\`]*\\)\` ([0-9]* lines)$/\\1/p' | head -n 1)
printf '{"comments": [{"path": "%s", "line": 1, "body": "GROUP-FINDING on %s"}]}\\n' "$first" "$first"
`;

const PIPELINE = (trigger: string, extra: string) => `version: 1.0.0
agent: bot
trigger:
  codehost: [${trigger}]
authors: [owner, member, collaborator, contributor, first_time_contributor, none]
targets: [agent]
instructions: Review the pull request for bugs.
result:
  schema:
    type: object
    properties:
      review: { $ref: svc://schemas/codehost/review/v1 }
    required: [review]
review:
  max_changed_lines: ${MAX_LINES}
  paths:
    - { path: "db/**", instructions: "DB-RULE: every migration must be reversible." }
${extra}`;

export interface LargeReviewBed {
  github: FakeGitHub;
  model: FakeModelApi;
  pool: pg.Pool;
  /** commits `files` in the work tree; the commit */
  commit(files: Record<string, string>, message: string): string;
  push(sha: string, ref: string): void;
  /** a signed pull_request delivery by a member; the trigger id */
  deliver(
    action: string,
    pull: { number: number; head: string; base: string; additions: number; deletions: number },
  ): Promise<string>;
  stop(): Promise<void>;
}

export async function startLargeReviewBed(adminDatabaseUrl: string): Promise<LargeReviewBed> {
  const database: TestDatabase = await createTestDatabase(adminDatabaseUrl);
  const git: GitHost = gitHost({ authorize: (token) => (token === CODEHOST_TOKEN ? true : "unknown") });
  const github = await startFakeGitHub({
    users: { [CODEHOST_TOKEN]: "svc-bot" },
    git,
    repos: { [REPO]: { repository: { full_name: REPO, private: true, default_branch: "main" }, pulls: [] } },
  });
  const model = new FakeModelApi();
  await model.start();
  const work = await mkdtemp(join(tmpdir(), "svc-e2e-large-work-"));
  const run = testGit(work);
  run(["init", "--quiet", "--initial-branch=main", work]);
  git.createRepo(REPO, { private: true });
  const dir = await writeConfigDir(
    {
      "daemon.yaml": `webhooks:
  sources:
    github: { verify: codehost, secret: "\${GITHUB_SECRET}" }
targets:
  agent: { runtime: command, command: ["./bin/task"], timeout: 60s }
  planner:
    runtime: openai
    base_url: ${model.url}
    model: test-model
    max_turns: 12
    timeout: 120s
    credentials: [{ name: a, secret: ${PLANNER_KEY} }]
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
      "bin/task": TASK_AGENT,
      "pipelines/split.yaml": PIPELINE(
        "pull_request.opened",
        `orchestrator:
  strategy: { type: auto }
  targets: [planner]
  max_parallel: 3
outputs:
  review: { handler: codehost.review }
`,
      ),
      "pipelines/refused.yaml": PIPELINE(
        "pull_request.reopened",
        "outputs:\n  review: { handler: codehost.review, sticky: true }\n",
      ),
    },
    ["bin/task"],
  );
  const env = {
    SVC_CONFIG_DIR: dir,
    SVC_DATABASE_URL: database.url,
    GITHUB_SECRET: SECRET,
    CODEHOST_TOKEN,
  };
  const { role: ingress, url } = await startIngress(env);
  let worker: RoleProcess;
  try {
    // the orchestrator's task tools are the daemon's /mcp
    worker = await startWorkerProcess({ ...env, SVC_DAEMON_URL: url });
  } catch (error) {
    await ingress.stop();
    throw error;
  }
  const pool = new pg.Pool({ connectionString: database.url, max: 2 });
  return {
    github,
    model,
    pool,
    commit(files, message) {
      for (const [path, text] of Object.entries(files)) {
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
          additions: pull.additions,
          deletions: pull.deletions,
          head: { ref: "feature", sha: pull.head, repo: { full_name: REPO } },
          base: { ref: "main", sha: pull.base, repo: { full_name: REPO } },
        },
      };
      const response = await postSignedDelivery(url, SECRET, "pull_request", payload);
      if (response.status !== 202)
        throw new Error(`the ingress answered ${response.status}: ${await response.text()}`);
      return ((await response.json()) as { trigger: string }).trigger;
    },
    async stop() {
      await worker.stop();
      await ingress.stop();
      await pool.end();
      await database.drop();
      await github.close();
      await model.stop();
      git.close();
      for (const path of [dir, work]) await rm(path, { recursive: true, force: true });
    },
  };
}
