// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} is the configuration substitution syntax
import { mkdirSync, writeFileSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import pg from "pg";
import { inject } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { testGit } from "../../support/git.ts";
import { type GitHost, gitHost } from "../../support/git-smart-http.ts";
import { type FakeGitHub, type HostedRepo, startFakeGitHub } from "../outputs/fake-github.ts";
import { postSignedDelivery } from "../outputs/pull-request.ts";
import { type RoleProcess, startIngress, startWorkerProcess, writeConfigDir } from "../worker/processes.ts";

/**
 * A real ingress and worker taking signed GitHub deliveries of any event, whose code host is the
 * loopback GitHub with git on the same origin: `acme/widgets` is private and answers to svc's token.
 * The loopback GitHub answers the two reads dispatch makes about an event (permissions and pull
 * requests) as api.github.com does: `GET /repos/{o}/{r}/collaborators/{user}/permission` from
 * `permissions` (a login absent there is not a collaborator: 404; `"unavailable"`: 502, GitHub
 * failing), `GET /repos/{o}/{r}/pulls/{n}` from `pulls`. Every run's setup step leaves the commit
 * it checked out and its SHA in `out/<invocation>/`; the agent answers with a review.
 */
export const REPO = "acme/widgets";
export const REPOSITORY = {
  id: 7001,
  name: "widgets",
  full_name: REPO,
  private: true,
  owner: { login: "acme" },
};
export const FORK = {
  id: 7002,
  name: "widgets",
  full_name: "stranger/widgets",
  owner: { login: "stranger" },
};
const SECRET = "e2e-event-authors-github-secret";
const TOKEN = "ghs_eventAuthorsDefaultIdentity1";
const API_DOCS = "https://docs.github.com/rest/collaborators/collaborators";

const AGENT = `#!/bin/sh
cat > /dev/null
echo '{"review":{"event":"COMMENT","body":"Looked at it."}}'
`;

const SETUP = [
  'd="$OUT/$(basename "$(dirname "$RUN_DIR")")"',
  'mkdir -p "$d"',
  'git -C "$WORKTREE" rev-parse HEAD > "$d/head" 2> /dev/null || true',
  'printf %s "$SHA" > "$d/sha"',
].join("; ");

export interface AuthorBed {
  github: FakeGitHub;
  git: GitHost;
  pool: pg.Pool;
  worker: RoleProcess;
  /** GitHub's pull request objects `GET .../pulls/{n}` answers with; a test may move their heads */
  pulls: Record<string, unknown>[];
  /** a signed delivery of `event` (X-GitHub-Event); its trigger */
  deliver(event: string, payload: unknown): Promise<string>;
  /** commits `files` on top of `from` (default: the work tree's HEAD) and returns the commit */
  commit(files: Record<string, string>, message: string, from?: string): string;
  /** pushes `sha` to `ref` of acme/widgets, as GitHub holds a pull request's head at refs/pull/<n>/head */
  push(sha: string, ref: string): void;
  /** what the setup step of the trigger's first run saw: the checked-out commit and $SHA */
  seen(trigger: string): Promise<{ head: string; sha: string }>;
  close(): Promise<void>;
}

export async function startAuthorBed(options: {
  /** pipeline name → its file's body after `version`/`agent`/`targets`/`setup` */
  pipelines: Record<string, string>;
  /** login → the permission GitHub states: admin, write, read, none, or "unavailable" */
  permissions: Record<string, string>;
}): Promise<AuthorBed> {
  const database: TestDatabase = await createTestDatabase(inject("adminDatabaseUrl"));
  const git = gitHost({ authorize: (token, repo) => (token === TOKEN ? repo === REPO : "unknown") });
  git.createRepo(REPO, { private: true });
  const pulls: Record<string, unknown>[] = [];
  const permission = /^\/repos\/([^/]+)\/([^/]+)\/collaborators\/([^/]+)\/permission$/;
  const answer = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { "content-type": "application/json; charset=utf-8" });
    res.end(JSON.stringify(body));
  };
  const routes = {
    handle(req: IncomingMessage, res: ServerResponse): boolean {
      const path = new URL(req.url ?? "/", "http://x").pathname;
      const asked = permission.exec(path);
      if (!asked || req.method !== "GET") return git.handle(req, res);
      if (req.headers.authorization !== `token ${TOKEN}`)
        answer(res, 401, { message: "Bad credentials", documentation_url: "https://docs.github.com/rest" });
      else if (`${asked[1]}/${asked[2]}` !== REPO) answer(res, 404, { message: "Not Found", status: "404" });
      else {
        const login = decodeURIComponent(asked[3]!);
        const level = options.permissions[login];
        if (level === "unavailable") answer(res, 502, { message: "Server Error" });
        else if (level === undefined)
          answer(res, 404, {
            message: "Not Found",
            documentation_url: `${API_DOCS}#get-repository-permissions-for-a-user`,
            status: "404",
          });
        else
          answer(res, 200, {
            permission: level,
            role_name: level,
            user: { login, id: 100 + login.length, type: "User", site_admin: false },
          });
      }
      return true;
    },
  };
  const hosted: HostedRepo = { repository: REPOSITORY, pulls };
  const github = await startFakeGitHub({
    users: { [TOKEN]: "svc-bot" },
    repos: { [REPO]: hosted },
    git: routes,
  });
  const scratch = await mkdtemp(join(tmpdir(), "svc-e2e-authors-"));
  const work = join(scratch, "work");
  const out = join(scratch, "out");
  const run = testGit(scratch);
  run(["init", "--quiet", "--initial-branch=main", work]);
  const dir = await writeConfigDir(
    {
      "daemon.yaml": `webhooks:
  sources:
    github: { verify: codehost, secret: "\${GITHUB_SECRET}" }
targets:
  agent: { runtime: command, command: ["./bin/agent"], timeout: 30s }
ask:
  targets: [agent]
repos:
  ${REPO}: {}
codehost:
  api_url: ${github.url}
  token: \${CODEHOST_TOKEN}
worker:
  concurrency: 2
  grace_period: 2s
`,
      "agents/bot/PERSONA.md": "---\nname: bot\ndescription: Looks.\n---\nYou look.\n",
      "bin/agent": AGENT,
      ...Object.fromEntries(
        Object.entries(options.pipelines).map(([name, body]) => [
          `pipelines/${name}.yaml`,
          `version: 1.0.0\nagent: bot\ntargets: [agent]\nenv:\n  OUT: ${out}\nsetup:\n  - run: ${JSON.stringify(SETUP)}\ninstructions: Look.\n${body}`,
        ]),
      ),
    },
    ["bin/agent"],
  );
  const env = {
    SVC_CONFIG_DIR: dir,
    SVC_DATABASE_URL: database.url,
    GITHUB_SECRET: SECRET,
    CODEHOST_TOKEN: TOKEN,
  };
  const { role: ingress, url } = await startIngress(env);
  const worker = await startWorkerProcess({ ...env, SVC_DAEMON_URL: url });
  const pool = new pg.Pool({ connectionString: database.url, max: 2 });
  return {
    github,
    git,
    pool,
    worker,
    pulls,
    async deliver(event, payload) {
      const response = await postSignedDelivery(url, SECRET, event, payload);
      const text = await response.text();
      if (response.status !== 202) throw new Error(`the github webhook answered ${response.status}: ${text}`);
      return (JSON.parse(text) as { trigger: string }).trigger;
    },
    commit(files, message, from) {
      if (from) run(["checkout", "--quiet", "--detach", from], work);
      for (const [path, text] of Object.entries(files)) {
        mkdirSync(dirname(join(work, path)), { recursive: true });
        writeFileSync(join(work, path), text);
      }
      run(["add", "--all"], work);
      run(["commit", "--quiet", "--allow-empty", "-m", message], work);
      return run(["rev-parse", "HEAD"], work);
    },
    push(sha, ref) {
      run(["push", "--quiet", "--force", git.pathOf(REPO), `${sha}:${ref}`], work);
    },
    async seen(trigger) {
      const { rows } = await pool.query(
        `SELECT i.id FROM svc.invocations i JOIN svc.workloads w ON w.id = i.workload_id
          WHERE w.trigger_id = $1 ORDER BY i.created_at LIMIT 1`,
        [trigger],
      );
      const folder = join(out, rows[0].id);
      return {
        head: (await readFile(join(folder, "head"), "utf8")).trim(),
        sha: await readFile(join(folder, "sha"), "utf8"),
      };
    },
    async close() {
      await worker.stop();
      await ingress.stop();
      await pool.end();
      await database.drop();
      await github.close();
      git.close();
      for (const path of [dir, scratch]) await rm(path, { recursive: true, force: true });
    },
  };
}
