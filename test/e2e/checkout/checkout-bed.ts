// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} is the configuration substitution syntax
import { randomBytes } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import pg from "pg";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { freePort } from "../../support/free-port.ts";
import { testGit } from "../../support/git.ts";
import { type GitHost, gitHost } from "../../support/git-smart-http.ts";
import { type FakeGitHub, startFakeGitHub } from "../outputs/fake-github.ts";
import { rsaKeyPair } from "../outputs/github-app-bed.ts";
import { PR_PAYLOAD, postSignedPullRequest } from "../outputs/pull-request.ts";
import { type RoleProcess, startIngress, startWorkerProcess, writeConfigDir } from "../worker/processes.ts";

export const WIDGETS = "acme/widgets";
/** public, and the App is not installed on it: read anonymously */
export const PUBLIC = "acme/public";
/** private, and the App is not installed on it: nobody of svc's may read it */
export const HIDDEN = "acme/hidden";
const APP_ID = 4343;
const SECRET = "e2e-checkout-github-secret";
/** a principal's long-lived token (a fine-grained PAT with contents: read on acme/widgets) */
export const PRINCIPAL_TOKEN = "github_pat_checkoutPrincipal0001";

/**
 * A real ingress and worker whose code host is the loopback GitHub with git on the same origin
 * (test/support/git-smart-http.ts): `acme/widgets` is private and answers only to the tokens the
 * loopback GitHub App issued for it (or the principal's token); pull requests are fork pull
 * requests, whose heads exist only at `refs/pull/<n>/head`. daemon.yaml lists the repositories
 * without `clone_url`, so they are cloned from the code host's origin. Pipelines:
 * `review` (opened, synchronize) and `fan-1` to `fan-4` (reopened) as the App; `as-principal`
 * (edited) as a principal's token. Each
 * setup step and agent leaves what it saw in `out/<invocation>/`.
 */
export interface CheckoutBed {
  github: FakeGitHub;
  git: GitHost;
  pool: pg.Pool;
  dir: string;
  out: string;
  worker: RoleProcess;
  ingress: RoleProcess;
  /** the worker's /metrics */
  metricsUrl: string;
  /** the App's private key: what nothing may leak either */
  appKey: string;
  /** the work tree the tests commit in: main, then each pull request's head */
  commit(files: Record<string, string>, message: string): string;
  /** pushes `sha` to `ref` of a repository as its host would hold it (refs/pull/<n>/head for a pull request) */
  push(repo: string, sha: string, ref: string): void;
  /** runs git in the work tree */
  git0(args: string[]): string;
  /** a signed pull_request delivery of a fork's pull request; the trigger id */
  deliver(
    action: string,
    pull: { repo?: string; number: number; head: string; base: string },
  ): Promise<string>;
  stop(): Promise<void>;
}

function setupStep(): string {
  return [
    'd="$OUT/$(basename "$(dirname "$RUN_DIR")")"',
    'mkdir -p "$d"',
    'git -C "$WORKTREE" rev-parse HEAD > "$d/head"',
    'git -C "$WORKTREE" diff --name-only "$BASE_SHA...HEAD" > "$d/diff" 2> "$d/diff.err"',
    'git -C "$WORKTREE" status --porcelain > "$d/status"',
    'printf %s "$BASE_SHA" > "$d/base"',
    'printf %s "$BASE_REF" > "$d/base-ref"',
    'env > "$d/setup-env"',
  ].join("; ");
}

const AGENT = `#!/bin/sh
cat > /dev/null
d="$OUT/$(basename "$(dirname "$RUN_DIR")")"
mkdir -p "$d"
env > "$d/agent-env"
echo '{}'
`;

function pipeline(out: string, events: string, principal = ""): string {
  return `version: 1.0.0
agent: bot
trigger:
  codehost: [${events}]
authors: [owner, member, collaborator, contributor, first_time_contributor, none]
targets: [agent]
retain_checkout: true
env:
  OUT: ${out}
${principal}setup:
  - run: ${JSON.stringify(setupStep())}
instructions: Look.
`;
}

export async function startCheckoutBed(adminDatabaseUrl: string): Promise<CheckoutBed> {
  const app = rsaKeyPair();
  const database: TestDatabase = await createTestDatabase(adminDatabaseUrl);
  let github: FakeGitHub | undefined;
  const installed = [WIDGETS];
  const git = gitHost({
    authorize(token, repo) {
      if (token === PRINCIPAL_TOKEN) return repo === WIDGETS;
      const exchange = github?.exchanges.find((entry) => entry.token === token);
      if (!exchange || Date.parse(exchange.expiresAt) <= Date.now()) return "unknown";
      const names = exchange.repositories;
      return installed.includes(repo) && (!names || names.includes(repo.split("/")[1]!));
    },
  });
  github = await startFakeGitHub({
    users: { [PRINCIPAL_TOKEN]: "reviewer-bot" },
    apps: [
      {
        id: APP_ID,
        slug: "svc-checkout",
        publicKey: app.publicKey,
        installations: [{ id: 81, account: "acme", repos: installed }],
      },
    ],
    git,
  });
  const metricsPort = await freePort();
  const work = await mkdtemp(join(tmpdir(), "svc-e2e-checkout-work-"));
  const out = await mkdtemp(join(tmpdir(), "svc-e2e-checkout-out-"));
  const run = testGit(work);
  run(["init", "--quiet", "--initial-branch=main", work]);
  for (const [repo, visibility] of [
    [WIDGETS, true],
    [PUBLIC, false],
    [HIDDEN, true],
  ] as const)
    git.createRepo(repo, { private: visibility });
  const dir = await writeConfigDir(
    {
      "daemon.yaml": `webhooks:
  sources:
    github: { verify: codehost, secret: "\${GITHUB_SECRET}" }
targets:
  agent: { runtime: command, command: ["./bin/agent"], timeout: 60s }
ask:
  targets: [agent]
repos:
  ${WIDGETS}: {}
  ${PUBLIC}: {}
  ${HIDDEN}: {}
codehost:
  api_url: ${github.url}
  app:
    id: ${APP_ID}
    private_key: "\${GITHUB_APP_PRIVATE_KEY}"
  principals:
    reviewer:
      token: "\${PRINCIPAL_TOKEN}"
worker:
  concurrency: 6
  metrics_port: ${metricsPort}
`,
      "agents/bot/PERSONA.md": "---\nname: bot\ndescription: Looks.\n---\nYou look.\n",
      "bin/agent": AGENT,
      "pipelines/review.yaml": pipeline(out, "pull_request.opened, pull_request.synchronize"),
      // four pipelines of one event: four runs of one repository at once
      ...Object.fromEntries(
        [1, 2, 3, 4].map((n) => [`pipelines/fan-${n}.yaml`, pipeline(out, "pull_request.reopened")]),
      ),
      "pipelines/as-principal.yaml": pipeline(
        out,
        "pull_request.edited",
        "principals:\n  reviewer: codehost.principal.reviewer\nprincipal: reviewer\n",
      ),
    },
    ["bin/agent"],
  );
  const env = {
    SVC_CONFIG_DIR: dir,
    SVC_DATABASE_URL: database.url,
    GITHUB_SECRET: SECRET,
    GITHUB_APP_PRIVATE_KEY: app.privateKey,
    PRINCIPAL_TOKEN,
    OUT: out,
  };
  const { role: ingress, url } = await startIngress(env);
  let worker: RoleProcess;
  try {
    worker = await startWorkerProcess(env);
  } catch (error) {
    await ingress.stop();
    throw error;
  }
  const pool = new pg.Pool({ connectionString: database.url, max: 2 });
  const bed: CheckoutBed = {
    ...{ github, git, pool, dir, out, worker, ingress },
    appKey: app.privateKey,
    metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`,
    git0: (args) => run(args, work),
    commit(files, message) {
      for (const [path, text] of Object.entries(files)) {
        mkdirSync(dirname(join(work, path)), { recursive: true });
        writeFileSync(join(work, path), text);
      }
      run(["add", "--all"], work);
      run(["commit", "--quiet", "-m", message], work);
      return run(["rev-parse", "HEAD"], work);
    },
    push(repo, sha, ref) {
      run(["push", "--quiet", "--force", git.pathOf(repo), `${sha}:${ref}`], work);
    },
    async deliver(action, pull) {
      const repo = pull.repo ?? WIDGETS;
      const [owner, name] = repo.split("/");
      const repository = { ...PR_PAYLOAD.repository, full_name: repo, name, owner: { login: owner } };
      const source = PR_PAYLOAD as unknown as { pull_request: Record<string, unknown> };
      const payload = {
        ...PR_PAYLOAD,
        action,
        number: pull.number,
        repository,
        pull_request: {
          ...source.pull_request,
          number: pull.number,
          author_association: "NONE",
          head: { ref: "patch-1", sha: pull.head, repo: { full_name: `stranger/${name}` } },
          base: { ref: "main", sha: pull.base, repo: { full_name: repo } },
        },
      };
      const response = await postSignedPullRequest(url, SECRET, payload);
      if (response.status !== 202)
        throw new Error(`the ingress answered ${response.status}: ${await response.text()}`);
      return ((await response.json()) as { trigger: string }).trigger;
    },
    async stop() {
      await worker.stop();
      await ingress.stop();
      await pool.end();
      await database.drop();
      await github?.close();
      git.close();
      for (const path of [dir, out, work]) await rm(path, { recursive: true, force: true });
    },
  };
  return bed;
}

/** `count` files of `size` random bytes (base64, as source text compresses poorly enough) under `prefix/`. */
export function randomFiles(prefix: string, count: number, size: number): Record<string, string> {
  const files: Record<string, string> = {};
  for (let i = 0; i < count; i++) files[`${prefix}/file-${i}.txt`] = randomBytes(size).toString("base64");
  return files;
}
