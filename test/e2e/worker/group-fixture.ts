// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} is the configuration substitution syntax

import { execFileSync } from "node:child_process";
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import pg from "pg";
import { inject } from "vitest";
import { lineage, waitFor } from "../../integration/worker/helpers.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { testGit } from "../../support/git.ts";
import { type FakeGitHub, startFakeGitHub } from "../outputs/fake-github.ts";
import { PR_PAYLOAD } from "../outputs/pull-request.ts";
import { postPullRequest, type RoleProcess, startIngress, startWorkerProcess } from "./processes.ts";

/**
 * What the concurrency-group tests run on: a real Postgres, the real ingress and worker processes,
 * the loopback GitHub fake, and a real git repository (a bare one, the clone source of every
 * configured repository) that the tests push commits to, force pushes included.
 *
 * Pipelines, each fired by `pull_request.opened` and `.synchronize` of its own repository:
 * - `cancelling` (acme/widgets): `concurrency: { group: pull_request, cancel_in_progress: true }`
 * - `waiting` (acme/gadgets): `concurrency: { group: pull_request, cancel_in_progress: false }`
 * - `ungrouped` (acme/sprockets): no `concurrency`, the same steps and agent
 * Each records PREVIOUS_SHA from its setup step and appends the head it reviews to
 * `<dir>/setup.log`; the agent writes its pid, appends `start`/`end` lines with the time to
 * `<dir>/agents.log`, holds while `<dir>/hold-<sha>` exists, then publishes a review naming the
 * head it reviewed and its PREVIOUS_SHA.
 */
export const GITHUB_SECRET = "e2e-groups-github-secret";
export const CODEHOST_TOKEN = "ghs_groupsDefaultIdentity0001";

const REVIEW_AGENT = `#!/bin/sh
cat > "$RUN_DIR/prompt.txt"
echo $$ > "$RUN_DIR/agent.pid"
echo "start $SHA $(date +%s%N)" >> "$HOME/agents.log"
while [ -e "$HOME/hold-$SHA" ]; do sleep 0.05; done
echo "end $SHA $(date +%s%N)" >> "$HOME/agents.log"
echo '{"review": {"event": "COMMENT", "body": "reviewed '"$SHA"' since '"$PREVIOUS_SHA"'"}}'
`;

const SETUP = `printf '%s' "$PREVIOUS_SHA" > "$RUN_DIR/previous.txt"; echo "$SHA" >> "$HOME/setup.log"`;

function pipelineFile(repo: string, concurrency: string): string {
  return `version: 1.0.0
agent: reviewer
trigger:
  codehost:
    - events: [pull_request.opened, pull_request.synchronize]
      repos: [${repo}]
${concurrency}targets: [review-agent]
setup:
  - run: ${JSON.stringify(SETUP)}
instructions: Review what changed.
result:
  schema:
    type: object
    properties:
      review: { $ref: svc://schemas/codehost/review/v1 }
    required: [review]
outputs:
  review: { handler: codehost.review }
`;
}

export const REPOS = { cancelling: "acme/widgets", waiting: "acme/gadgets", ungrouped: "acme/sprockets" };

export interface GroupStack {
  database: TestDatabase;
  pool: pg.Pool;
  dir: string;
  github: FakeGitHub;
  url: string;
  ingress: RoleProcess;
  workers: RoleProcess[];
  env: Record<string, string>;
  startWorker(): Promise<RoleProcess>;
  /** commits `content` on `branch` (from `from`, else the branch's tip, else main) and pushes it, forced */
  commit(branch: string, content: string, from?: string): string;
  /** a signed `pull_request.<action>` delivery naming `sha` as the head; the trigger id */
  push(repo: string, number: number, sha: string, action?: string): Promise<string>;
  hold(sha: string): Promise<void>;
  release(sha: string): Promise<void>;
  /** the run of a trigger (its only invocation), once `ready` says so */
  runOf(
    trigger: string,
    ready?: (invocation: Record<string, unknown>) => boolean,
    what?: string,
  ): Promise<{ invocation: Record<string, unknown>; runDir: string }>;
  /** the agent pid a run wrote, once it wrote it */
  agentPid(runDir: string): Promise<number>;
  close(): Promise<void>;
}

export async function openGroupStack(): Promise<GroupStack> {
  const database = await createTestDatabase(inject("adminDatabaseUrl"));
  const github = await startFakeGitHub({ users: { [CODEHOST_TOKEN]: "svc-default" } });
  const dir = await mkdtemp(join(tmpdir(), "svc-e2e-groups-"));
  const seed = join(dir, "seed");
  const bare = join(dir, "repo.git");
  const inRepo = testGit(dir);
  const git = (args: string[], cwd = seed) => inRepo(args, cwd);
  git(["init", "--quiet", "--initial-branch=main", seed], dir);
  await writeFile(join(seed, "app.txt"), "base\n");
  git(["add", "app.txt"]);
  git(["commit", "--quiet", "-m", "base"]);
  git(["init", "--quiet", "--bare", bare], dir);
  git(["push", "--quiet", bare, "main"]);
  const repos = Object.values(REPOS)
    .map((repo) => `  ${repo}:\n    clone_url: ${bare}\n`)
    .join("");
  const files: Record<string, string> = {
    "daemon.yaml": `webhooks:
  sources:
    github: { verify: codehost, secret: "\${GITHUB_SECRET}" }
targets:
  review-agent: { runtime: command, command: ["./bin/review"], timeout: 5m }
ask:
  targets: [review-agent]
codehost:
  api_url: ${github.url}
  token: \${CODEHOST_TOKEN}
repos:
${repos}worker:
  concurrency: 4
  grace_period: 2s
`,
    "agents/reviewer/PERSONA.md": "---\nname: reviewer\ndescription: Reviews.\n---\nYou review.\n",
    "bin/review": REVIEW_AGENT,
    "pipelines/cancelling.yaml": pipelineFile(
      REPOS.cancelling,
      "concurrency:\n  group: pull_request\n  cancel_in_progress: true\n",
    ),
    "pipelines/waiting.yaml": pipelineFile(
      REPOS.waiting,
      "concurrency:\n  group: pull_request\n  cancel_in_progress: false\n",
    ),
    "pipelines/ungrouped.yaml": pipelineFile(REPOS.ungrouped, ""),
  };
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), text);
    if (path.startsWith("bin/")) await chmod(join(dir, path), 0o755);
  }
  const env: Record<string, string> = {
    SVC_CONFIG_DIR: dir,
    SVC_DATABASE_URL: database.url,
    GITHUB_SECRET,
    CODEHOST_TOKEN,
    // steps and agents see HOME: the test's directory, where the hold files and logs live
    HOME: dir,
    SVC_WORKER_HEARTBEAT_MS: "200",
    SVC_WORKER_STALE_MS: "1500",
  };
  const started = await startIngress(env);
  const pool = new pg.Pool({ connectionString: database.url, max: 3 });
  const workers: RoleProcess[] = [];
  const stack: GroupStack = {
    database,
    pool,
    dir,
    github,
    url: started.url,
    ingress: started.role,
    workers,
    env,
    async startWorker() {
      const worker = await startWorkerProcess(env);
      workers.push(worker);
      return worker;
    },
    commit(branch, content, from) {
      const tip = from ?? (git(["branch", "--list", branch]) ? branch : "main");
      git(["checkout", "--quiet", "-B", branch, tip]);
      execFileSync("sh", ["-c", `printf '%s\\n' "$1" >> app.txt`, "sh", content], { cwd: seed });
      git(["commit", "--quiet", "-am", content]);
      git(["push", "--quiet", "--force", bare, branch]);
      return git(["rev-parse", "HEAD"]);
    },
    async push(repo, number, sha, action = "synchronize") {
      const payload = structuredClone(PR_PAYLOAD) as unknown as {
        action: string;
        number: number;
        repository: { full_name: string };
        pull_request: {
          number: number;
          head: { sha: string; repo: { full_name: string } };
          base: { repo: { full_name: string } };
        };
      };
      payload.action = action;
      payload.number = number;
      payload.repository.full_name = repo;
      payload.pull_request.number = number;
      payload.pull_request.head.sha = sha;
      payload.pull_request.head.repo.full_name = repo;
      payload.pull_request.base.repo.full_name = repo;
      return postPullRequest(started.url, GITHUB_SECRET, payload);
    },
    async hold(sha) {
      await writeFile(join(dir, `hold-${sha}`), "");
    },
    async release(sha) {
      await rm(join(dir, `hold-${sha}`), { force: true });
    },
    async runOf(trigger, ready = () => true, what = "its run") {
      const found = await waitFor(async () => {
        const { workloads, invocations } = await lineage(pool, trigger);
        return invocations[0] && ready(invocations[0])
          ? { workload: workloads[0], invocation: invocations[0] }
          : undefined;
      }, `trigger ${trigger}: ${what}`);
      return {
        invocation: found.invocation,
        runDir: join(dir, "workspaces", found.workload.id, String(found.invocation.id), "run"),
      };
    },
    async agentPid(runDir) {
      const text = await waitFor(
        async () => (await readFile(join(runDir, "agent.pid"), "utf8").catch(() => "")).trim(),
        `the agent of ${runDir} to start`,
      );
      return Number(text);
    },
    async close() {
      for (const worker of workers) await worker.stop("SIGKILL");
      await started.role.stop();
      await pool.end();
      await database.drop();
      await github.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
  return stack;
}

/** The reviews the fake code host holds for `repo#number`: the first line of each body (svc stamps the rest). */
export function reviewBodies(github: FakeGitHub, repo: string, number: number): string[] {
  return (github.reviews.get(`${repo}#${number}`) ?? []).map((review) => review.body.split("\n")[0]!.trim());
}

/** Whether the process `pid` (or anything of its group) still runs. */
export function processAlive(pid: number): boolean {
  for (const target of [pid, -pid]) {
    try {
      process.kill(target, 0);
      return true;
    } catch {
      // ESRCH: gone; try the group next
    }
  }
  return false;
}
