// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} is the configuration substitution syntax
import { rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import type { BrowserContext } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { waitForTrigger } from "../../integration/worker/helpers.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { type FakeGitHub, startFakeGitHub } from "../outputs/fake-github.ts";
import { FILES_V1 } from "../outputs/sticky-bed.ts";
import { FakeModelApi } from "../worker/fake-model-api.ts";
import {
  postWebhook,
  type RoleProcess,
  startIngress,
  startWorkerProcess,
  writeConfigDir,
} from "../worker/processes.ts";
import { conversationPage } from "./github-conversation.ts";
import { hasChromium, launchChromium, warnWithoutChromium } from "./support.ts";

/**
 * A review's sticky comment as a reader sees it: real ingress and worker processes review a pull
 * request with a priced `openai` target against a loopback model; svc posts the review to the
 * loopback GitHub (one finding inline, one on an ignored path dropped and counted, the footer with
 * the run's tokens and cost); the conversation is rendered as github.com lays it out and opened in
 * Debian's Chromium. It saves a screenshot to SVC_SCREENSHOT, else to svc-sticky-comment.png in
 * the temporary directory (docs/sticky-comment.png is one).
 */
warnWithoutChromium("test/e2e/ui/sticky-comment-page.test.ts");
const SCREENSHOT = process.env.SVC_SCREENSHOT ?? join(tmpdir(), "svc-sticky-comment.png");
const HOOK_TOKEN = "e2e-sticky-page-hook";
const CODEHOST_TOKEN = "ghs_stickyPageIdentity0001";
const MODEL_KEY = "sk-sticky-page-0001";
const REPO = "acme/widgets";
const PULL = `${REPO}#42`;

const RESULT = {
  review: {
    event: "COMMENT",
    body: "One risk in `main()`: the new call can throw and nothing catches it. The rename is fine.",
    comments: [
      { path: "src/app.js", line: 21, body: "`b()` can throw here and `main()` does not catch it." },
      { path: "test/__snapshots__/app.snap", line: 1, body: "The snapshot changed." },
    ],
  },
};

describe.skipIf(!hasChromium)("a review's sticky comment in Chromium", { timeout: 120_000 }, () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  let dir: string;
  let github: FakeGitHub;
  let ingress: RoleProcess;
  let worker: RoleProcess;
  let url: string;
  let browser: BrowserContext;
  let closeBrowser: (() => Promise<void>) | undefined;
  const model = new FakeModelApi();

  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    await model.start();
    model.answer(MODEL_KEY, { status: 200, content: JSON.stringify(RESULT) });
    github = await startFakeGitHub({ users: { [CODEHOST_TOKEN]: "svc-bot" } });
    github.files.set(PULL, [
      ...FILES_V1,
      { filename: "test/__snapshots__/app.snap", status: "modified", patch: "@@ -1 +1 @@\n-a\n+b" },
    ]);
    dir = await writeConfigDir({
      "daemon.yaml": `server:
  public_url: https://svc.example.test
webhooks:
  sources:
    review-hook: { verify: bearer, secret: "\${HOOK_TOKEN}" }
targets:
  claude-sonnet:
    runtime: openai
    base_url: ${model.url}
    model: test-model
    timeout: 60s
    credentials: [{ name: a, secret: ${MODEL_KEY} }]
    price: { input: 3, output: 15 }
  local: { runtime: command, command: [/bin/cat] }
ask:
  targets: [local]
codehost:
  api_url: ${github.url}
  token: \${CODEHOST_TOKEN}
`,
      "agents/reviewer/PERSONA.md": "---\nname: reviewer\ndescription: Reviews.\n---\nYou review.\n",
      "pipelines/pr-review.yaml": `version: 2.3.0
agent: reviewer
trigger:
  webhook: [review-hook]
targets: [claude-sonnet]
instructions: Review the pull request.
review:
  paths:
    - { path: "**/*.snap", ignore: true }
result:
  schema:
    type: object
    properties:
      review: { $ref: svc://schemas/codehost/review/v1 }
    required: [review]
outputs:
  review: { handler: codehost.review, sticky: true }
`,
    });
    const env = { SVC_CONFIG_DIR: dir, SVC_DATABASE_URL: database.url, HOOK_TOKEN, CODEHOST_TOKEN };
    ({ role: ingress, url } = await startIngress(env));
    worker = await startWorkerProcess(env);
    pool = new pg.Pool({ connectionString: database.url, max: 2 });
    ({ browser, close: closeBrowser } = await launchChromium());
  }, 120_000);

  afterAll(async () => {
    await closeBrowser?.();
    await worker?.stop();
    await ingress?.stop();
    await pool?.end();
    await database?.drop();
    await github?.close();
    await model.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("shows the review, the dropped finding's count and the footer with tokens and cost", async () => {
    const trigger = await postWebhook(url, "review-hook", HOOK_TOKEN, {
      repository: { full_name: REPO },
      pull_request: { number: 42, head: { sha: "c".repeat(40), ref: "feature" } },
    });
    expect((await waitForTrigger(pool, trigger)).status).toBe("completed");

    const page = await browser.newPage();
    await page.setContent(conversationPage(github, PULL, "Catch the error b() throws"));
    const sticky = page.locator("section.comment").first();
    const text = (await sticky.locator(".markdown").textContent()) ?? "";
    expect(text).toContain("One risk in main()");
    expect(text).toContain("1 finding on ignored paths dropped");
    expect(text).toMatch(new RegExp(`pr-review 2\\.3\\.0 · ${trigger} · [\\d,]+ tokens · \\$\\d+\\.\\d\\d`));
    expect(await page.locator(".inline .path").allTextContents()).toEqual(["src/app.js line 21"]);
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    expect((await stat(SCREENSHOT)).size).toBeGreaterThan(10_000);
    await page.close();
  });
});
