// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} is the configuration substitution syntax
import { rm } from "node:fs/promises";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { lineage, waitFor, waitForTrigger } from "../../integration/worker/helpers.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { freePort } from "../../support/free-port.ts";
import { FakeModelApi, USAGE_PER_CALL } from "../worker/fake-model-api.ts";
import {
  postWebhook,
  type RoleProcess,
  startIngress,
  startWorkerProcess,
  writeConfigDir,
} from "../worker/processes.ts";
import { type FakeGitHub, startFakeGitHub } from "./fake-github.ts";

const HOOK_TOKEN = "e2e-cost-hook-token";
const CODEHOST_TOKEN = "ghs_costFooterIdentity0001";
const MODEL_KEY = "sk-cost-footer-0001";
const REPO = "acme/widgets";
/** USD per million tokens: each answer (120 in, 30 out) costs $0.12 + $0.06 */
const PRICE = { input: 1000, output: 2000 };
const PER_CALL =
  (USAGE_PER_CALL.prompt_tokens * PRICE.input + USAGE_PER_CALL.completion_tokens * PRICE.output) / 1e6;

/**
 * The sticky comment's footer states what the run's model calls used, as the worker's gateway
 * counted them: real ingress and worker processes, an `openai` target with a `price` against a
 * loopback OpenAI-compatible API, publishing to the loopback GitHub. The footer's tokens and cost
 * are the sum of the run's tasks' usage (the gateway's ledger), and the worker's
 * `svc_gateway_cost_total` counted the same cost under the run's pipeline.
 */
describe("cost in the sticky comment's footer", { timeout: 120_000 }, () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  let dir: string;
  let github: FakeGitHub;
  let ingress: RoleProcess;
  let worker: RoleProcess;
  let url: string;
  let metricsPort: number;
  const model = new FakeModelApi();

  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    await model.start();
    model.answer(MODEL_KEY, { status: 200, content: JSON.stringify({ summary: { body: "Looks good." } }) });
    github = await startFakeGitHub({ users: { [CODEHOST_TOKEN]: "svc-bot" } });
    metricsPort = await freePort();
    dir = await writeConfigDir({
      "daemon.yaml": `webhooks:
  sources:
    review-hook: { verify: bearer, secret: "\${HOOK_TOKEN}" }
targets:
  priced:
    runtime: openai
    base_url: ${model.url}
    model: test-model
    timeout: 60s
    credentials: [{ name: a, secret: ${MODEL_KEY} }]
    price: { input: ${PRICE.input}, output: ${PRICE.output} }
  local: { runtime: command, command: [/bin/cat] }
ask:
  targets: [local]
codehost:
  api_url: ${github.url}
  token: \${CODEHOST_TOKEN}
worker:
  metrics_port: ${metricsPort}
`,
      "agents/reviewer/PERSONA.md": "---\nname: reviewer\ndescription: Reviews.\n---\nYou review.\n",
      "pipelines/cost-review.yaml": `version: 1.4.0
agent: reviewer
trigger:
  webhook: [review-hook]
targets: [priced]
instructions: Summarise the pull request.
result:
  schema:
    type: object
    properties:
      summary: { $ref: svc://schemas/codehost/comment/v1 }
outputs:
  summary: { handler: codehost.comment, sticky: true }
`,
    });
    const env = { SVC_CONFIG_DIR: dir, SVC_DATABASE_URL: database.url, HOOK_TOKEN, CODEHOST_TOKEN };
    ({ role: ingress, url } = await startIngress(env));
    worker = await startWorkerProcess(env);
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
  });

  it("the footer's tokens and cost are the gateway ledger's for the run, and the metric counted the same cost", async () => {
    const trigger = await postWebhook(url, "review-hook", HOOK_TOKEN, {
      repository: { full_name: REPO },
      pull_request: { number: 12, head: { sha: "a".repeat(40), ref: "feature" } },
    });
    const ended = await waitForTrigger(pool, trigger);
    const { invocations } = await lineage(pool, trigger);
    expect(ended.status, JSON.stringify(invocations[0]?.diagnostic)).toBe("completed");

    // the ledger: what the gateway recorded on the run's tasks
    const { rows } = await pool.query<{ usage: Record<string, number> }>(
      "SELECT usage FROM svc.tasks WHERE invocation_id = $1 AND usage IS NOT NULL",
      [invocations[0]!.id],
    );
    const tokens = rows.reduce((n, row) => n + row.usage.input_tokens! + row.usage.output_tokens!, 0);
    const cost = rows.reduce((n, row) => n + (row.usage.cost_usd ?? 0), 0);
    const calls = model.count(MODEL_KEY, "/chat/completions");
    expect(calls).toBeGreaterThan(0);
    expect(tokens).toBe(calls * (USAGE_PER_CALL.prompt_tokens + USAGE_PER_CALL.completion_tokens));
    expect(cost).toBeCloseTo(calls * PER_CALL, 9);

    const [comment, ...more] = github.comments.get(`${REPO}#12`) ?? [];
    expect(more).toEqual([]);
    expect(comment!.body).toContain(
      `\n---\n<sub>cost-review 1.4.0 · ${trigger} · ${tokens.toLocaleString("en-US")} tokens · $${cost.toFixed(2)}</sub>\n`,
    );

    // the worker counts the cost as the gateway charges it; REPO is not in `repos`, so repo=""
    const sample = await waitFor(async () => {
      const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      const match = /^svc_gateway_cost_total\{pipeline="cost-review",repo=""\} (\S+)$/m.exec(text);
      return match && Math.abs(Number(match[1]) - cost) < 1e-9 ? Number(match[1]) : undefined;
    }, "svc_gateway_cost_total to reach the run's cost");
    expect(sample).toBeCloseTo(cost, 9);
  });
});
