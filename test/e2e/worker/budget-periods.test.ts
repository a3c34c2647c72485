// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} is the configuration substitution syntax
import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { lineage, waitFor, waitForTrigger } from "../../integration/worker/helpers.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { type FakeGitHub, startFakeGitHub } from "../outputs/fake-github.ts";
import { FakeModelApi } from "./fake-model-api.ts";
import {
  postWebhook,
  type RoleProcess,
  startIngress,
  startWorkerProcess,
  writeConfigDir,
} from "./processes.ts";

const HOOK_TOKEN = "e2e-budget-hook-token";
const CODEHOST_TOKEN = "ghs_budgetPeriodsIdentity01";
const PRICED_KEY = "sk-budget-priced-0001";
const CHEAP_KEY = "sk-budget-cheap-0002";
/** USD per million tokens: an answer (120 in, 30 out, fake-model-api.ts) costs $0.18 on priced */
const PRICE = { input: 1000, output: 2000 };
/** ten answers of $0.18 spend $1.80: past it; nine ($1.62) are not */
const PER_DAY = 1.75;
const CLOCK = join(import.meta.dirname, ".budget-clock");

const day = (offset: number) => {
  const now = new Date();
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + offset))
    .toISOString()
    .slice(0, 10);
};
/** The worker's budget clock: two seconds before today's reset (UTC), or just past it. */
const setClock = (at: string) => writeFile(CLOCK, at);
const BEFORE_MIDNIGHT = `${day(0)}T23:59:58.000Z`;
const AFTER_MIDNIGHT = `${day(1)}T00:00:01.000Z`;

const pipeline = (hook: string, targets: string) => `version: 1.0.0
agent: reviewer
trigger:
  webhook: [${hook}]
targets: ${targets}
instructions: Summarise the pull request.
result:
  schema:
    type: object
    properties:
      summary: { $ref: svc://schemas/codehost/comment/v1 }
outputs:
  summary: { handler: codehost.comment, sticky: true, progress: true }
`;

/**
 * `budgets.repos: { per: day, cost }` with real ingress and worker processes, priced `openai`
 * targets against a loopback OpenAI-compatible API, and the loopback GitHub. The worker's budget
 * clock is injected (budget-clock.ts) and stands still two seconds before midnight UTC: the
 * spend is the tasks' recorded usage since today's start. Ten runs of one repository spend the
 * day's budget; the eleventh waits in the queue with `budget_wait` on its trigger and in its
 * sticky comment, and runs once the clock passes midnight. A pipeline listing
 * `{ target: cheap, when: over_budget }` runs its eleventh on the cheap target instead.
 */
describe("budgets that wait for the period's reset", { timeout: 240_000 }, () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  let dir: string;
  let github: FakeGitHub;
  let ingress: RoleProcess;
  let worker: RoleProcess;
  let url: string;
  const model = new FakeModelApi();

  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    await model.start();
    const answer = { status: 200, content: JSON.stringify({ summary: { body: "Looks good." } }) } as const;
    model.answer(PRICED_KEY, answer);
    model.answer(CHEAP_KEY, answer);
    github = await startFakeGitHub({ users: { [CODEHOST_TOKEN]: "svc-bot" } });
    await setClock(BEFORE_MIDNIGHT);
    const target = (key: string, price: { input: number; output: number }) => `
    runtime: openai
    base_url: ${model.url}
    model: test-model
    timeout: 60s
    credentials: [{ name: a, secret: ${key} }]
    price: { input: ${price.input}, output: ${price.output} }`;
    dir = await writeConfigDir({
      "daemon.yaml": `webhooks:
  sources:
    review-hook: { verify: bearer, secret: "\${HOOK_TOKEN}" }
    cheap-hook: { verify: bearer, secret: "\${HOOK_TOKEN}" }
targets:
  priced:${target(PRICED_KEY, PRICE)}
  cheap:${target(CHEAP_KEY, { input: 10, output: 20 })}
  local: { runtime: command, command: [/bin/cat] }
budgets:
  repos: { per: day, cost: ${PER_DAY} }
ask:
  targets: [local]
codehost:
  api_url: ${github.url}
  token: \${CODEHOST_TOKEN}
worker:
  concurrency: 1
`,
      "agents/reviewer/PERSONA.md": "---\nname: reviewer\ndescription: Reviews.\n---\nYou review.\n",
      "pipelines/review.yaml": pipeline("review-hook", "[priced]"),
      "pipelines/review-cheap.yaml": pipeline("cheap-hook", "[priced, { target: cheap, when: over_budget }]"),
    });
    const env = { SVC_CONFIG_DIR: dir, SVC_DATABASE_URL: database.url, HOOK_TOKEN, CODEHOST_TOKEN };
    ({ role: ingress, url } = await startIngress(env));
    const clock = pathToFileURL(join(import.meta.dirname, "budget-clock.ts")).href;
    worker = await startWorkerProcess({
      ...env,
      NODE_OPTIONS: `--import=${clock}`,
      SVC_TEST_BUDGET_CLOCK: CLOCK,
    });
    pool = new pg.Pool({ connectionString: database.url, max: 2 });
  }, 120_000);

  afterAll(async () => {
    await worker?.stop();
    await ingress?.stop();
    await pool?.end();
    await database?.drop();
    await github?.close();
    await model.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
    await rm(CLOCK, { force: true });
  });

  const pullRequest = (hook: string, repo: string, number: number) =>
    postWebhook(url, hook, HOOK_TOKEN, {
      repository: { full_name: repo },
      pull_request: { number, head: { sha: String(number).padStart(40, "a"), ref: "feature" } },
    });

  /** Ten runs of `repo`, one after another, each completed: the day's budget is spent. */
  async function spendTheDay(hook: string, repo: string): Promise<void> {
    for (let number = 1; number <= 10; number += 1) {
      const ended = await waitForTrigger(pool, await pullRequest(hook, repo, number));
      expect(ended.status, JSON.stringify(ended.diagnostic)).toBe("completed");
    }
  }

  it("the eleventh run waits with budget_wait and runs once the clock passes midnight UTC", async () => {
    const repo = "acme/widgets";
    await spendTheDay("review-hook", repo);
    expect(model.count(PRICED_KEY, "/chat/completions")).toBe(10);

    const eleventh = await pullRequest("review-hook", repo, 11);
    // what `svc trigger list` prints: the trigger is running, its diagnostic budget_wait
    const held = await waitFor(async () => {
      const { rows } = await pool.query("SELECT status, diagnostic FROM svc.triggers WHERE id = $1", [
        eleventh,
      ]);
      return rows[0]?.diagnostic?.code === "budget_wait" ? rows[0] : undefined;
    }, "the eleventh trigger to wait for the budget");
    expect(held.status).toBe("running");
    expect(held.diagnostic.message).toContain(`until ${day(1)}T00:00:00.000Z`);
    const sticky = await waitFor(
      async () => github.comments.get(`${repo}#11`)?.find((c) => c.body.includes("budget_wait")),
      "the sticky comment to say the run waits",
    );
    expect(sticky.body).toContain("waits for the budget");
    // held twice at least (it is offered again and again while the clock stands): no model call
    await worker.waitForLog(
      (line) =>
        line.event === "budget.waiting" &&
        worker.logs.filter((l) => l.event === "budget.waiting").length >= 2,
      "the run to be held again",
    );
    expect(model.count(PRICED_KEY, "/chat/completions")).toBe(10);

    await setClock(AFTER_MIDNIGHT);
    const ended = await waitForTrigger(pool, eleventh);
    expect(ended.status, JSON.stringify(ended.diagnostic)).toBe("completed");
    expect(ended.diagnostic).toBeNull();
    expect(model.count(PRICED_KEY, "/chat/completions")).toBe(11);
    const { invocations } = await lineage(pool, eleventh);
    expect(invocations.map((i: { target: string | null }) => i.target)).toEqual(["priced"]);
  });

  it("with { target: cheap, when: over_budget } the eleventh runs on the cheap target instead", async () => {
    await setClock(BEFORE_MIDNIGHT);
    const repo = "acme/gadgets";
    const before = model.count(PRICED_KEY, "/chat/completions");
    await spendTheDay("cheap-hook", repo);
    expect(model.count(PRICED_KEY, "/chat/completions")).toBe(before + 10);

    const eleventh = await pullRequest("cheap-hook", repo, 11);
    const ended = await waitForTrigger(pool, eleventh);
    expect(ended.status, JSON.stringify(ended.diagnostic)).toBe("completed");
    expect(model.count(PRICED_KEY, "/chat/completions")).toBe(before + 10);
    expect(model.count(CHEAP_KEY, "/chat/completions")).toBe(1);
    const { invocations } = await lineage(pool, eleventh);
    expect(invocations.map((i: { target: string | null }) => i.target)).toEqual(["cheap"]);
  });
});
