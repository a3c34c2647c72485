// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} is the configuration substitution syntax
import { rm } from "node:fs/promises";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { lineage, waitForTrigger } from "../../integration/worker/helpers.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { type FakeGitHub, startFakeGitHub } from "../outputs/fake-github.ts";
import { PR_PAYLOAD, postSignedPullRequest } from "../outputs/pull-request.ts";
import { type RoleProcess, startIngress, startWorkerProcess, writeConfigDir } from "./processes.ts";

/**
 * `trigger.codehost` pull request filters through a real ingress and worker: signed `pull_request`
 * deliveries in GitHub's shape, and the loopback GitHub serving each pull request's changed files
 * (`GET /repos/{o}/{r}/pulls/{n}/files`), which the worker reads at dispatch for `paths`.
 */
const SECRET = "e2e-trigger-filters-secret";
const TOKEN = "ghs_triggerFiltersIdentity0001";
const REPO = PR_PAYLOAD.repository.full_name;

const PIPELINES: Record<string, string> = {
  // reviews code: a pull request touching only docs/ is not its business; drafts wait (the default)
  "src-review": '    - events: [pull_request.opened, pull_request.synchronize]\n      paths: ["src/**"]\n',
  // reviews on request: the label asks, and later pushes while it is on
  "label-review": "    - events: [pull_request.synchronize]\n      labels: [ai-review]\n",
};

const AGENT = `#!/usr/bin/env node
require("node:fs").readFileSync(0, "utf8");
console.log(JSON.stringify({ event: process.env.EVENT_NAME }));
`;

describe("trigger filters: paths, labels, drafts (real ingress, worker, loopback GitHub)", () => {
  let database: TestDatabase;
  let github: FakeGitHub;
  let ingress: { role: RoleProcess; url: string };
  let worker: RoleProcess;
  let pool: pg.Pool;
  let dir: string;

  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    github = await startFakeGitHub({ users: { [TOKEN]: "svc-bot" } });
    const files: Record<string, string> = {
      "daemon.yaml": `webhooks:
  sources:
    github: { verify: codehost, secret: "\${GITHUB_SECRET}" }
targets:
  echo: { runtime: command, command: ["./bin/agent"], timeout: 30s }
ask:
  targets: [echo]
codehost:
  api_url: ${github.url}
  token: \${CODEHOST_TOKEN}
worker:
  concurrency: 2
  grace_period: 2s
`,
      "agents/reviewer/PERSONA.md": "---\nname: reviewer\ndescription: Reviews.\n---\nYou review.\n",
      "bin/agent": AGENT,
    };
    for (const [name, trigger] of Object.entries(PIPELINES))
      files[`pipelines/${name}.yaml`] =
        `version: 1.0.0\nagent: reviewer\ntargets: [echo]\ninstructions: Review.\ntrigger:\n  codehost:\n${trigger}`;
    dir = await writeConfigDir(files, ["bin/agent"]);
    const env = {
      SVC_CONFIG_DIR: dir,
      SVC_DATABASE_URL: database.url,
      GITHUB_SECRET: SECRET,
      CODEHOST_TOKEN: TOKEN,
    };
    ingress = await startIngress(env);
    worker = await startWorkerProcess({ ...env, SVC_DAEMON_URL: ingress.url });
    pool = new pg.Pool({ connectionString: database.url, max: 2 });
  });

  afterAll(async () => {
    await worker?.stop();
    await ingress?.role.stop();
    await pool?.end();
    await database?.drop();
    await github?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** Pull request `number` changes `paths` on the fake, as GitHub lists them. */
  function changes(number: number, paths: string[]): void {
    github.files.set(
      `${REPO}#${number}`,
      paths.map((filename) => ({ filename, status: "modified", patch: "@@ -1 +1 @@\n-a\n+b" })),
    );
  }

  /** Delivers `pull_request.<action>` of pull request `number`; what its trigger ended as and fired. */
  async function deliver(
    number: number,
    action: string,
    pull: { draft?: boolean; labels?: string[]; label?: string } = {},
  ): Promise<{ code: string | undefined; message: string | undefined; fired: string[] }> {
    const payload = {
      ...PR_PAYLOAD,
      action,
      number,
      pull_request: {
        ...PR_PAYLOAD.pull_request,
        number,
        draft: pull.draft ?? false,
        labels: (pull.labels ?? []).map((name, id) => ({ id, name, color: "ededed", default: false })),
      },
      ...(pull.label ? { label: { id: 99, name: pull.label, color: "ededed", default: false } } : {}),
    };
    const response = await postSignedPullRequest(ingress.url, SECRET, payload);
    const text = await response.text();
    expect(response.status, text).toBe(202);
    const trigger = (JSON.parse(text) as { trigger: string }).trigger;
    const done = await waitForTrigger(pool, trigger);
    expect(done.status).toBe("completed");
    const { workloads } = await lineage(pool, trigger);
    return {
      code: done.diagnostic?.code,
      message: done.diagnostic?.message,
      fired: workloads.map((w: { pipeline: string }) => w.pipeline).sort(),
    };
  }

  const filesRead = (number: number) =>
    github.requests.filter((r) => r.method === "GET" && r.path === `/repos/${REPO}/pulls/${number}/files`)
      .length;

  it("a paths filter skips a pull request touching only docs/, and says which filter; one touching src/ runs", async () => {
    changes(21, ["docs/guide.md", "docs/api/index.md"]);
    expect(await deliver(21, "opened")).toEqual({
      code: "filtered",
      message: "pipeline src-review: no changed file matches paths [src/**]",
      fired: [],
    });
    expect(filesRead(21)).toBe(1);

    changes(22, ["docs/guide.md", "src/app.ts"]);
    expect(await deliver(22, "opened")).toMatchObject({ code: undefined, fired: ["src-review"] });
  });

  it("a label fires its pipeline, a push while it is on too, and a push without it does not", async () => {
    changes(23, ["src/app.ts"]);
    expect(await deliver(23, "labeled", { labels: ["bug", "ai-review"], label: "ai-review" })).toMatchObject({
      fired: ["label-review"],
    });
    // src-review (synchronize) takes this push too: its file is under src/
    expect(await deliver(23, "synchronize", { labels: ["ai-review"] })).toMatchObject({
      fired: ["label-review", "src-review"],
    });

    changes(24, ["docs/guide.md"]);
    expect(await deliver(24, "synchronize", { labels: ["bug"] })).toEqual({
      code: "filtered",
      message:
        "pipeline label-review: #24 carries none of labels [ai-review]; pipeline src-review: no changed file matches paths [src/**]",
      fired: [],
    });
  });

  it("a draft waits for ready_for_review: its opened fires nothing (no files read), ready_for_review fires", async () => {
    changes(25, ["src/app.ts"]);
    expect(await deliver(25, "opened", { draft: true })).toEqual({
      code: "filtered",
      message:
        "pipeline src-review: #25 is a draft (drafts: false): it fires once the pull request is ready_for_review",
      fired: [],
    });
    expect(filesRead(25)).toBe(0);
    expect(await deliver(25, "ready_for_review")).toMatchObject({ code: undefined, fired: ["src-review"] });
    expect(filesRead(25)).toBe(1);
  });
});
