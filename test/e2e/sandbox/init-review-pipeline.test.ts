import { mkdirSync, writeFileSync } from "node:fs";
import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
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
import { FakeAnthropic } from "../agents/fake-anthropic.ts";
import { svc } from "../cli/support.ts";
import { type FakeGitHub, type HostedRepo, startFakeGitHub } from "../outputs/fake-github.ts";
import { PR_PAYLOAD, postSignedPullRequest } from "../outputs/pull-request.ts";
import { type RoleProcess, startIngress, startWorkerProcess } from "../worker/processes.ts";

const unavailable = engineSuiteUnavailable();
if (unavailable) console.warn(`svc init review end-to-end suite skipped: ${unavailable}`);

const REPO = "acme/widgets";
const NUMBER = 7;
const THREAD = `${REPO}#${NUMBER}`;
const WEBHOOK_SECRET = "e2e-init-review-webhook-secret";
const GITHUB_TOKEN = "ghs_initReviewDefaultIdentity01";
const ANTHROPIC_API_KEY = "sk-ant-init-review";
const BASE_FILE = 'import x from "x";\nlet name = 1;\nexport {};\n';
const FINDING = { path: "src/app.js", line: 2, body: "`nm` says less than `name`: keep the old name." };

/** A file's whole-file patch as GitHub lists it for a pull request (GET .../pulls/{n}/files). */
function patchOf(text: string): string {
  const lines = text.trimEnd().split("\n");
  return `@@ -1,${lines.length} +1,${lines.length} @@\n${lines.map((line) => ` ${line}`).join("\n")}`;
}

/**
 * The pipeline `svc init review --agent claude-code` writes, unchanged, reviewing a pull request end
 * to end: a real dockerd with the agent image, the pinned Claude Code in the pipeline's network-none
 * container talking to a loopback Anthropic through the worker's gateway, the repository checked out
 * over smart HTTP from the loopback GitHub, which gets the sticky progress comment and the review.
 * Only daemon.yaml's addresses are pointed at the fakes (API, model, engine socket).
 */
describe.skipIf(unavailable)("the review pipeline svc init writes, on a real container engine", () => {
  let engine: TestEngine;
  let database: TestDatabase;
  let pool: pg.Pool;
  let parent: string;
  let dir: string;
  let git: GitHost;
  let github: FakeGitHub;
  let ingress: RoleProcess;
  let worker: RoleProcess;
  let url: string;
  const anthropic = new FakeAnthropic();
  let commit: (files: Record<string, string>, message: string) => string;
  let base: string;
  /** the head the first review saw */
  let reviewed: string;
  /** the newest head pushed, and the role processes' environment */
  let latest: string;
  let env: Record<string, string>;
  /** what the loopback GitHub answers for the repository and its pull requests (`--fire` reads it) */
  const hosted: HostedRepo = { repository: { full_name: REPO, private: true }, pulls: [] };

  beforeAll(async () => {
    const ready = await startEngineWithImages();
    engine = ready.engine;
    // the pull (the longest step here) goes on while the rest is set up: only a run needs the image
    const pulled = pullTagged(engine, ready.registry, "agent:default");
    pulled.catch(() => {}); // awaited below; a failure before then must not go unhandled
    await anthropic.start();
    anthropic.behave(ANTHROPIC_API_KEY, {
      kind: "script",
      note: { title: "naming", body: "this repository keeps descriptive names" },
      result: { review: { event: "COMMENT", body: "One naming finding.", comments: [FINDING] } },
    });
    git = gitHost({ authorize: (token, repo) => (token === GITHUB_TOKEN ? repo === REPO : "unknown") });
    git.createRepo(REPO, { private: true });
    github = await startFakeGitHub({ users: { [GITHUB_TOKEN]: "svc-bot" }, git, repos: { [REPO]: hosted } });

    parent = await mkdtemp(join(tmpdir(), "svc-init-review-e2e-"));
    const work = join(parent, "work");
    const run = testGit(parent);
    run(["init", "--quiet", "--initial-branch=main", work]);
    commit = (files, message) => {
      for (const [path, text] of Object.entries(files)) {
        mkdirSync(dirname(join(work, path)), { recursive: true });
        writeFileSync(join(work, path), text);
      }
      run(["add", "--all"], work);
      run(["commit", "--quiet", "-m", message], work);
      const sha = run(["rev-parse", "HEAD"], work);
      run(["push", "--quiet", "--force", git.pathOf(REPO), `${sha}:refs/heads/main`], work);
      return sha;
    };
    base = commit({ "src/app.js": BASE_FILE }, "base");

    dir = join(parent, ".svc");
    const init = await svc(["init", "review", "--agent", "claude-code", "--dir", dir, "--repo", REPO], {
      HOME: parent,
    });
    expect(init.code, init.stderr).toBe(0);
    // the operator's part: where the code host, the model API and the engine are
    const daemonPath = join(dir, "daemon.yaml");
    const daemon = YAML.parseDocument(await readFile(daemonPath, "utf8"));
    daemon.setIn(["codehost", "api_url"], github.url);
    daemon.setIn(["targets", "claude", "base_url"], anthropic.url);
    daemon.setIn(["sandboxes", "engine"], { socket: engine.socket });
    daemon.setIn(["sandboxes", "limits"], { memory: "1g", cpus: 1, pids: 512 });
    await writeFile(daemonPath, daemon.toString());

    database = await createTestDatabase(inject("adminDatabaseUrl"));
    env = {
      SVC_CONFIG_DIR: dir,
      SVC_DATABASE_URL: database.url,
      GITHUB_WEBHOOK_SECRET: WEBHOOK_SECRET,
      GITHUB_TOKEN,
      ANTHROPIC_API_KEY,
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
    await anthropic.stop();
    if (parent) await rm(parent, { recursive: true, force: true });
  }, 120_000);

  const deliver = async (action: string, head: string, association: string, headRepo = REPO) => {
    const [owner, name] = REPO.split("/");
    const source = PR_PAYLOAD as unknown as { pull_request: Record<string, unknown> };
    const payload = {
      ...PR_PAYLOAD,
      action,
      number: NUMBER,
      repository: { ...PR_PAYLOAD.repository, full_name: REPO, name, owner: { login: owner } },
      pull_request: {
        ...source.pull_request,
        number: NUMBER,
        author_association: association,
        head: { ref: "rename", sha: head, repo: { full_name: headRepo } },
        base: { ref: "main", sha: base, repo: { full_name: REPO } },
      },
    };
    const response = await postSignedPullRequest(url, WEBHOOK_SECRET, payload);
    expect(response.status, await response.clone().text()).toBe(202);
    const { trigger } = (await response.json()) as { trigger: string };
    const row = await waitFor(
      async () => {
        const { rows } = await pool.query("SELECT * FROM svc.triggers WHERE id = $1", [trigger]);
        return rows[0] && ["completed", "error", "discarded"].includes(rows[0].status) ? rows[0] : undefined;
      },
      `trigger ${trigger} to end`,
      240_000,
    );
    return { trigger: row, ...(await lineage(pool, trigger)) };
  };
  const runDir = (found: { workloads: { id: string }[]; invocations: { id: string }[] }) =>
    join(dir, "workspaces", found.workloads[0]!.id, found.invocations[0]!.id, "run");
  /** The svc.role of each container the engine started for `invocation` since `since` (seconds). */
  const containerRoles = async (since: number, invocation: string) => {
    const until = Math.ceil(Date.now() / 1000) + 1;
    const label = [`svc.invocation=${invocation}`];
    const stream = await engine.docker.getEvents({ since, until, filters: { type: ["container"], label } });
    let text = "";
    for await (const chunk of stream as AsyncIterable<Buffer>) text += chunk.toString("utf8");
    return text
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { Action: string; Actor: { Attributes: Record<string, string> } })
      .filter((event) => event.Action === "start")
      .map((event) => event.Actor.Attributes["svc.role"])
      .sort();
  };
  const exists = (path: string) =>
    stat(path).then(
      () => true,
      () => false,
    );

  it("a member's pull request: reviewed in its container, the progress comment then the review in one sticky comment", async () => {
    // the pull request's head: a rename on a branch of the repository
    const head = commit({ "src/app.js": BASE_FILE.replace("let name", "let nm") }, "rename");
    github.files.set(THREAD, [
      { filename: "src/app.js", status: "modified", patch: patchOf(BASE_FILE.replace("let name", "let nm")) },
    ]);
    reviewed = head;
    const since = Math.floor(Date.now() / 1000) - 1;
    const found = await deliver("opened", head, "MEMBER");
    expect(found.invocations).toHaveLength(1);
    expect(found.invocations[0].status, JSON.stringify(found.invocations[0].diagnostic)).toBe("completed");
    // the setup step and the agent each ran in a container of their own
    expect(await containerRoles(since, found.invocations[0].id)).toEqual(["agent", "setup"]);

    // the setup step: the pull request's diff against its base, and no earlier review to narrow it to
    const diff = await readFile(join(runDir(found), "pull-request.diff"), "utf8");
    expect(diff).toContain("-let name = 1;\n+let nm = 1;");
    expect(await exists(join(runDir(found), "changes.diff"))).toBe(false);
    // the model was asked with the key, through the worker's gateway, told to review everything
    const prompts = anthropic.seen(ANTHROPIC_API_KEY, "/v1/messages");
    expect(prompts.length).toBeGreaterThan(0);
    expect(prompts[0]!.text).toContain("$PREVIOUS_SHA is empty): review everything");

    const comments = github.comments.get(THREAD) ?? [];
    expect(comments).toHaveLength(1);
    expect(comments[0]!.body).toContain("One naming finding.");
    expect(comments[0]!.body).toContain("<!-- svc:sticky:pr-review:review -->");
    const writes = github.requests.filter(
      (request) => request.path.includes(`/issues/`) && ["POST", "PATCH"].includes(request.method),
    );
    // first the progress line on the head, then the result edited into the same comment
    expect(writes[0]!.method).toBe("POST");
    expect(JSON.stringify(writes[0]!.body)).toContain(
      `**pr-review** is running on commit ${head.slice(0, 7)}`,
    );
    expect(writes.at(-1)!.method).toBe("PATCH");
    expect(writes.at(-1)!.path).toBe(`/repos/${REPO}/issues/comments/${comments[0]!.id}`);
    // the new inline finding is posted as a review on the head
    const reviews = github.reviews.get(THREAD) ?? [];
    expect(reviews).toHaveLength(1);
    expect(reviews[0]!.commit_id).toBe(head);
    expect((github.reviewComments.get(THREAD) ?? []).map((c) => [c.path, c.line])).toEqual([
      [FINDING.path, FINDING.line],
    ]);
  });

  it("a push: reviewed incrementally (PREVIOUS_SHA), the same sticky comment edited, no second one", async () => {
    const head = commit(
      { "src/app.js": `${BASE_FILE.replace("let name", "let nm")}export const two = 2;\n` },
      "another change",
    );
    latest = head;
    const found = await deliver("synchronize", head, "MEMBER");
    expect(found.invocations[0].status, JSON.stringify(found.invocations[0].diagnostic)).toBe("completed");
    const changes = await readFile(join(runDir(found), "changes.diff"), "utf8");
    expect(changes).toContain("+export const two = 2;");
    // only what changed since the last review: the rename it saw is context, not a change
    expect(changes).not.toContain("+let nm");
    expect(changes).not.toContain("-let name");
    const prompts = anthropic.seen(ANTHROPIC_API_KEY, "/v1/messages");
    expect(prompts.at(-1)!.text).toContain("# Since the last review");
    expect(prompts.at(-1)!.text).toContain(`reviewed ${reviewed}, an ancestor of this head`);
    expect(github.comments.get(THREAD) ?? []).toHaveLength(1);
  });

  it("svc doctor --deep --fire rehearses the pull request's push: the review it would post is shown, nothing is posted", async () => {
    const [owner, name] = REPO.split("/");
    const source = PR_PAYLOAD as unknown as { pull_request: Record<string, unknown> };
    // GitHub's answer for the pull request: the daemon builds the rehearsed event from it
    hosted.pulls = [
      {
        ...source.pull_request,
        number: NUMBER,
        state: "open",
        author_association: "MEMBER",
        head: { ref: "rename", sha: latest, repo: { full_name: REPO } },
        base: {
          ref: "main",
          sha: base,
          repo: { ...PR_PAYLOAD.repository, full_name: REPO, name, owner: { login: owner } },
        },
      },
    ];
    // writes through the REST API (a checkout's fetch and a GraphQL query are POSTs that write nothing)
    const restWrites = () =>
      github.requests.filter((request) => request.method !== "GET" && request.path.startsWith("/repos/"))
        .length;
    const writesBefore = restWrites();
    const requestsBefore = anthropic.seen(ANTHROPIC_API_KEY, "/v1/messages").length;
    const sticky = (github.comments.get(THREAD) ?? [])[0]!.body;
    const reviews = (github.reviews.get(THREAD) ?? []).length;

    const doctor = await svc(["doctor", "--deep", "--fire", `${THREAD}`, "--json"], env);
    const report = JSON.parse(doctor.stdout) as {
      fire: {
        status: string;
        head: string;
        runs: { pipeline: string; status: string; diagnostic: unknown; wouldPost: string | null }[];
      };
    };
    expect(report.fire.head).toBe(latest);
    expect(report.fire.status, doctor.stderr).toBe("completed");
    expect(report.fire.runs).toHaveLength(1);
    const [run] = report.fire.runs;
    expect(run!.status, JSON.stringify(run!.diagnostic)).toBe("completed");
    expect(run!.pipeline).toBe("pr-review");
    // the agent really ran again on the model, and what it would have posted is shown
    expect(anthropic.seen(ANTHROPIC_API_KEY, "/v1/messages").length).toBeGreaterThan(requestsBefore);
    expect(run!.wouldPost).toContain(`## outputs.review → ${THREAD} (codehost.review, sticky, COMMENT)`);
    expect(run!.wouldPost).toContain("One naming finding.");
    // nothing was written to the pull request: no progress note, no edit of the sticky comment, no review
    expect(restWrites()).toBe(writesBefore);
    expect((github.comments.get(THREAD) ?? [])[0]!.body).toBe(sticky);
    expect(github.reviews.get(THREAD) ?? []).toHaveLength(reviews);

    // the human form names the run and prints the held review
    const human = await svc(["doctor", "--deep", "--fire", `${THREAD}`], env);
    expect(human.stdout).toContain(`rehearsing ${THREAD} at ${latest.slice(0, 12)} with outputs held back`);
    expect(human.stdout).toContain("--- what pr-review would post (held back, nothing was posted) ---");
    expect(restWrites()).toBe(writesBefore);
  });

  it("a fork's pull request is not reviewed: the author gate", async () => {
    const requests = anthropic.requests.length;
    const found = await deliver("reopened", base, "CONTRIBUTOR", "stranger/widgets");
    expect(found.invocations).toHaveLength(0);
    expect(found.trigger.diagnostic?.code).toBe("author_not_allowed");
    expect(anthropic.requests.length).toBe(requests);
  });
});
