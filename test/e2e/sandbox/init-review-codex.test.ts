import { mkdirSync, writeFileSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import YAML from "yaml";
import { lineage } from "../../integration/worker/helpers.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { testGit } from "../../support/git.ts";
import { type GitHost, gitHost } from "../../support/git-smart-http.ts";
import {
  engineSuiteUnavailable,
  pullTagged,
  startEngineWithImages,
  type TestEngine,
} from "../../support/sandbox-engine.ts";
import { waitFor } from "../../support/wait-for.ts";
import { FakeResponses } from "../agents/fake-responses.ts";
import { svc } from "../cli/support.ts";
import { type FakeGitHub, startFakeGitHub } from "../outputs/fake-github.ts";
import { PR_PAYLOAD, postSignedPullRequest } from "../outputs/pull-request.ts";
import { type RoleProcess, startIngress, startWorkerProcess } from "../worker/processes.ts";

const unavailable = engineSuiteUnavailable();
if (unavailable) console.warn(`svc init review --agent codex end-to-end suite skipped: ${unavailable}`);

const REPO = "acme/widgets";
const NUMBER = 9;
const THREAD = `${REPO}#${NUMBER}`;
const WEBHOOK_SECRET = "e2e-init-review-codex-webhook-secret";
const GITHUB_TOKEN = "ghs_initReviewCodexIdentity001";
const OPENAI_API_KEY = "sk-init-review-codex";
const BASE_FILE = 'import x from "x";\nlet name = 1;\nexport {};\n';

/**
 * The pipeline `svc init review --agent codex` writes, unchanged but for daemon.yaml's addresses,
 * reviewing a member's pull request end to end: the pinned Codex in the pipeline's network-none
 * container, talking to a loopback OpenAI Responses API through the worker's gateway, the
 * repository checked out over smart HTTP from the loopback GitHub, which gets the sticky comment.
 */
describe.skipIf(unavailable)(
  "the review pipeline svc init writes for codex, on a real container engine",
  () => {
    let engine: TestEngine;
    let database: TestDatabase;
    let pool: pg.Pool;
    let parent: string;
    let git: GitHost;
    let github: FakeGitHub;
    let ingress: RoleProcess;
    let worker: RoleProcess;
    let url: string;
    const openai = new FakeResponses();
    let head: string;
    let base: string;

    beforeAll(async () => {
      const ready = await startEngineWithImages();
      engine = ready.engine;
      const pulled = pullTagged(engine, ready.registry, "agent:default");
      await openai.start();
      openai.behave(OPENAI_API_KEY, {
        kind: "script",
        note: { title: "naming", body: "this repository keeps descriptive names" },
        result: { review: { event: "COMMENT", body: "Codex: one naming finding.", comments: [] } },
      });
      git = gitHost({ authorize: (token, repo) => (token === GITHUB_TOKEN ? repo === REPO : "unknown") });
      git.createRepo(REPO, { private: true });
      github = await startFakeGitHub({ users: { [GITHUB_TOKEN]: "svc-bot" }, git });

      parent = await mkdtemp(join(tmpdir(), "svc-init-review-codex-"));
      const work = join(parent, "work");
      const run = testGit(parent);
      run(["init", "--quiet", "--initial-branch=main", work]);
      const commit = (text: string, message: string) => {
        mkdirSync(dirname(join(work, "src/app.js")), { recursive: true });
        writeFileSync(join(work, "src/app.js"), text);
        run(["add", "--all"], work);
        run(["commit", "--quiet", "-m", message], work);
        const sha = run(["rev-parse", "HEAD"], work);
        run(["push", "--quiet", "--force", git.pathOf(REPO), `${sha}:refs/heads/main`], work);
        return sha;
      };
      base = commit(BASE_FILE, "base");
      head = commit(BASE_FILE.replace("let name", "let nm"), "rename");

      const dir = join(parent, ".svc");
      const init = await svc(["init", "review", "--agent", "codex", "--dir", dir, "--repo", REPO], {
        HOME: parent,
      });
      expect(init.code, init.stderr).toBe(0);
      const daemonPath = join(dir, "daemon.yaml");
      const daemon = YAML.parseDocument(await readFile(daemonPath, "utf8"));
      daemon.setIn(["codehost", "api_url"], github.url);
      daemon.setIn(["targets", "codex", "base_url"], `${openai.url}/v1`);
      daemon.setIn(["targets", "openai-api", "base_url"], `${openai.url}/v1`);
      daemon.setIn(["sandboxes", "engine"], { socket: engine.socket });
      daemon.setIn(["sandboxes", "limits"], { memory: "1g", cpus: 1, pids: 512 });
      await writeFile(daemonPath, daemon.toString());

      database = await createTestDatabase(inject("adminDatabaseUrl"));
      const env: Record<string, string> = {
        SVC_CONFIG_DIR: dir,
        SVC_DATABASE_URL: database.url,
        GITHUB_WEBHOOK_SECRET: WEBHOOK_SECRET,
        GITHUB_TOKEN,
        OPENAI_API_KEY,
      };
      const validate = await svc(["config", "validate", "--dir", dir], env);
      expect(validate.stdout).toContain("configuration valid: 1 pipeline, 1 source, 2 targets");
      const started = await startIngress(env);
      ingress = started.role;
      url = started.url;
      env.SVC_DAEMON_URL = url;
      worker = await startWorkerProcess(env);
      pool = new pg.Pool({ connectionString: database.url, max: 2 });
      await pulled;
    }, 1_800_000);

    afterAll(async () => {
      await worker?.stop();
      await ingress?.stop();
      await pool?.end();
      await database?.drop();
      await github?.close();
      git?.close();
      await engine?.stop();
      await openai.stop();
      if (parent) await rm(parent, { recursive: true, force: true });
    }, 120_000);

    it("a member's pull request: Codex reviews it in its container, the review lands in the sticky comment", async () => {
      const [owner, name] = REPO.split("/");
      const source = PR_PAYLOAD as unknown as { pull_request: Record<string, unknown> };
      const payload = {
        ...PR_PAYLOAD,
        action: "opened",
        number: NUMBER,
        repository: { ...PR_PAYLOAD.repository, full_name: REPO, name, owner: { login: owner } },
        pull_request: {
          ...source.pull_request,
          number: NUMBER,
          author_association: "MEMBER",
          head: { ref: "rename", sha: head, repo: { full_name: REPO } },
          base: { ref: "main", sha: base, repo: { full_name: REPO } },
        },
      };
      const response = await postSignedPullRequest(url, WEBHOOK_SECRET, payload);
      expect(response.status, await response.clone().text()).toBe(202);
      const { trigger } = (await response.json()) as { trigger: string };
      await waitFor(
        async () => {
          const { rows } = await pool.query("SELECT status FROM svc.triggers WHERE id = $1", [trigger]);
          return ["completed", "error", "discarded"].includes(rows[0]?.status) ? rows[0] : undefined;
        },
        `trigger ${trigger} to end`,
        240_000,
      );
      const { invocations, artifacts } = await lineage(pool, trigger);
      const transcript = artifacts.find((artifact) => artifact.name === "transcript")?.rendered ?? "";
      expect(
        invocations[0].status,
        `${JSON.stringify(invocations[0].diagnostic)}\n${transcript.slice(-3000)}`,
      ).toBe("completed");
      // the model was asked through the gateway with the key: Codex ran against the Responses API
      expect(openai.seen(OPENAI_API_KEY, "/v1/responses").length).toBeGreaterThan(0);
      const comments = github.comments.get(THREAD) ?? [];
      expect(comments).toHaveLength(1);
      expect(comments[0]!.body).toContain("Codex: one naming finding.");
      expect(comments[0]!.body).toContain("<!-- svc:sticky:pr-review:review -->");
    });
  },
);
