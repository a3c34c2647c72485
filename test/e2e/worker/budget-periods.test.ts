// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} is the configuration substitution syntax
import { rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
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
// outside the checkout: a run of the suite leaves nothing in the source tree
const CLOCK = join(tmpdir(), `svc-budget-clock-${process.pid}`);

const day = (offset: number) => {
  const now = new Date();
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + offset))
    .toISOString()
    .slice(0, 10);
};
/**
 * The worker's budget clock: an hour before today's reset (UTC), or just past it. It stands still
 * between the test's writes, so only the test passes the reset (passTheReset).
 */
const setClock = (at: string) => writeFile(CLOCK, at);
const BEFORE_MIDNIGHT = `${day(0)}T23:00:00.000Z`;
const AFTER_MIDNIGHT = `${day(1)}T00:00:01.000Z`;
/** BEFORE_MIDNIGHT to the reset, in seconds: when a held run's lane job falls due */
const HOUR = 3600;

const pipeline = (hook: string, targets: string, extra = "") => `version: 1.0.0
agent: reviewer
trigger:
  webhook: [${hook}]
targets: ${targets}
${extra}instructions: Summarise the pull request.
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
 * clock is injected (budget-clock.ts) and stands still an hour before midnight UTC: the spend is
 * the tasks' recorded usage since today's start. Ten runs of one repository spend the day's
 * budget; the eleventh waits in the queue with `budget_wait` on its trigger and in its sticky
 * comment, its lane job due at the reset (an hour on) and offered to no worker before, and runs
 * once the reset passes. With `budgets.members_first`, a member's held run resumes before an
 * outsider's held earlier. A pipeline listing `{ target: cheap, when: over_budget }` runs its
 * eleventh on the cheap target instead.
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
    members-hook: { verify: bearer, secret: "\${HOOK_TOKEN}" }
    spend-hook: { verify: bearer, secret: "\${HOOK_TOKEN}" }
targets:
  priced:${target(PRICED_KEY, PRICE)}
  cheap:${target(CHEAP_KEY, { input: 10, output: 20 })}
  local: { runtime: command, command: [/bin/cat] }
budgets:
  repos: { per: day, cost: ${PER_DAY} }
  members_first: true
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
      // an outsider's pull request runs it too (worker/event/gates.ts): the members test needs one
      // what spends the day: the same priced target, nothing posted (a post to GitHub waits its
      // turn behind the last one, 3 s apart, as Octokit spaces them: ten of them are half a minute)
      "pipelines/spend.yaml": `version: 1.0.0
agent: reviewer
trigger:
  webhook: [spend-hook]
targets: [priced]
instructions: Summarise the pull request.
`,
      "pipelines/review-members.yaml": pipeline(
        "members-hook",
        "[priced]",
        "authors: [owner, member, collaborator, contributor]\n",
      ),
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

  /** A pull request event; `author`: GitHub's author_association (none stated: the operator's, an owner's) */
  const pullRequest = (hook: string, repo: string, number: number, author?: string) =>
    postWebhook(url, hook, HOOK_TOKEN, {
      repository: { full_name: repo },
      pull_request: {
        number,
        head: { sha: String(number).padStart(40, "a"), ref: "feature" },
        ...(author ? { author_association: author } : {}),
      },
    });

  /** Ten runs of `repo` (of the pipeline that posts nothing), each completed: the day's budget is spent. */
  async function spendTheDay(repo: string): Promise<void> {
    for (let number = 1; number <= 10; number += 1) {
      const ended = await waitForTrigger(pool, await pullRequest("spend-hook", repo, number));
      expect(ended.status, JSON.stringify(ended.diagnostic)).toBe("completed");
    }
  }

  /** The trigger's one invocation, once it waits for the budget (its trigger says budget_wait). */
  async function heldRun(triggerId: string): Promise<string> {
    return waitFor(async () => {
      const { rows } = await pool.query(
        `SELECT i.id FROM svc.triggers t JOIN svc.workloads w ON w.trigger_id = t.id
           JOIN svc.invocations i ON i.workload_id = w.id
          WHERE t.id = $1 AND t.diagnostic->>'code' = 'budget_wait' AND i.status = 'queued'`,
        [triggerId],
      );
      return rows[0]?.id as string | undefined;
    }, `the run of ${triggerId} to wait for the budget`);
  }

  /**
   * The held run's lane jobs not yet offered to any worker (`created`), each due `dueInS` seconds
   * from now. (The job its held attempt ran under, kept active as that attempt's lease, is
   * completed a moment after the release: not one of these.)
   */
  async function laneJob(invocationId: string) {
    const { rows } = await pool.query(
      `SELECT id, name, priority, state, extract(epoch FROM start_after - now())::float8 AS "dueInS"
         FROM pgboss.job WHERE data->>'invocationId' = $1 AND name LIKE 'svc-lane-%' AND state = 'created'`,
      [invocationId],
    );
    return rows;
  }

  /**
   * The hour to the reset passes: the worker's budget clock goes past midnight, and the held runs'
   * jobs fall due as they would at the reset (pg-boss's clock is the database's, not injected).
   */
  async function passTheReset(invocationIds: string[]): Promise<void> {
    await setClock(AFTER_MIDNIGHT);
    await pool.query(
      `UPDATE pgboss.job SET start_after = now() WHERE data->>'invocationId' = ANY($1) AND state = 'created'`,
      [invocationIds],
    );
  }

  const logsOf = (event: string, invocation: string) =>
    worker.logs.filter((line) => line.event === event && line.invocation === invocation);

  it("the eleventh run waits with budget_wait and runs once the clock passes midnight UTC", async () => {
    const repo = "acme/widgets";
    await spendTheDay(repo);
    expect(model.count(PRICED_KEY, "/chat/completions")).toBe(10);

    const eleventh = await pullRequest("review-hook", repo, 11);
    const run = await heldRun(eleventh);
    // what `svc trigger list` prints: the trigger is running, its diagnostic budget_wait
    const { rows: held } = await pool.query("SELECT status, diagnostic FROM svc.triggers WHERE id = $1", [
      eleventh,
    ]);
    expect(held[0].status).toBe("running");
    expect(held[0].diagnostic.message).toContain(`until ${day(1)}T00:00:00.000Z`);
    const sticky = await waitFor(
      async () => github.comments.get(`${repo}#11`)?.find((c) => c.body.includes("budget_wait")),
      "the sticky comment to say the run waits",
    );
    expect(sticky.body).toContain("waits for the budget");
    // scheduled, not polled: its one lane job falls due at the reset, an hour on, and until then
    // no worker is offered it (claimed once, held once, no model call)
    const [job, ...more] = await laneJob(run);
    expect(more).toEqual([]);
    expect(job).toMatchObject({ name: "svc-lane-priced", state: "created" });
    expect(job.dueInS).toBeGreaterThan(HOUR - 120);
    expect(job.dueInS).toBeLessThanOrEqual(HOUR + 1);
    expect(logsOf("budget.waiting", run)).toHaveLength(1);
    expect(logsOf("budget.waiting", run)[0]).toMatchObject({ resume_after_s: HOUR });
    expect(logsOf("invocation.started", run)).toHaveLength(1);
    expect(model.count(PRICED_KEY, "/chat/completions")).toBe(10);

    await passTheReset([run]);
    const ended = await waitForTrigger(pool, eleventh);
    expect(ended.status, JSON.stringify(ended.diagnostic)).toBe("completed");
    expect(ended.diagnostic).toBeNull();
    expect(model.count(PRICED_KEY, "/chat/completions")).toBe(11);
    const { invocations } = await lineage(pool, eleventh);
    expect(invocations.map((i: { target: string | null }) => i.target)).toEqual(["priced"]);
    // offered twice in all: once held, once at the reset, where it went ahead
    expect(logsOf("invocation.started", run)).toHaveLength(2);
    expect(logsOf("budget.waiting", run)).toHaveLength(1);
  });

  it("with budgets.members_first a member's held run resumes before an outsider's held earlier", async () => {
    await setClock(BEFORE_MIDNIGHT);
    const repo = "acme/members";
    await spendTheDay(repo);
    // the outsider's pull request is held first, the member's after it
    const outsider = await heldRun(await pullRequest("members-hook", repo, 11, "CONTRIBUTOR"));
    const member = await heldRun(await pullRequest("members-hook", repo, 12, "MEMBER"));
    const [outsiderJob] = await laneJob(outsider);
    const [memberJob] = await laneJob(member);
    expect([outsiderJob.priority, memberJob.priority]).toEqual([0, 1]);
    expect(logsOf("budget.waiting", member)[0]).toMatchObject({ priority: 1 });

    // both fall due at once; the worker has one slot, so the order it takes them in is the order they end
    await passTheReset([outsider, member]);
    for (const id of [outsider, member])
      await waitFor(async () => {
        const { rows } = await pool.query("SELECT status FROM svc.invocations WHERE id = $1", [id]);
        return rows[0]?.status === "completed";
      }, `run ${id} to complete after the reset`);
    const { rows } = await pool.query(
      "SELECT id FROM svc.invocations WHERE id = ANY($1) ORDER BY finished_at",
      [[outsider, member]],
    );
    expect(rows.map((row: { id: string }) => row.id)).toEqual([member, outsider]);
  });

  it("with { target: cheap, when: over_budget } the eleventh runs on the cheap target instead", async () => {
    await setClock(BEFORE_MIDNIGHT);
    const repo = "acme/gadgets";
    const before = model.count(PRICED_KEY, "/chat/completions");
    await spendTheDay(repo);
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
