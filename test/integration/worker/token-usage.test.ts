import type { PgBoss } from "pg-boss";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { renderTree } from "../../../cli/commands/trace.ts";
import { startBoss } from "../../../db/boss.ts";
import type { ConfigSnapshot } from "../../../shared/config/types.ts";
import { type RunningWorker, startWorker } from "../../../worker/main.ts";
import { type Answer, FakeModelApi, USAGE_PER_CALL } from "../../e2e/worker/fake-model-api.ts";
import { type ApiHarness, startApi, tokensBlock } from "../api/support.ts";
import {
  captureLogger,
  commandTarget,
  fire,
  makeConfig,
  openTestBed,
  pipeline,
  type TestBed,
  waitForTrigger,
  writeScript,
} from "./helpers.ts";

/**
 * Token usage from the worker's gateway to the reader: an `openai` target against the loopback
 * model API (each completion reports USAGE_PER_CALL, as the real API does) makes two model calls
 * per run, a tool call and the final answer, both through the gateway, which reads their usage
 * and prices it by the target's `price`; the worker stores the sum on the agent task, and the
 * daemon's eval statistics and trace read it back. A `command` target reports none: null.
 */
const TOKEN = "secret-usage-reader";
const RUNS = 2;
const CALLS_PER_RUN = 2;
/** USD per million tokens */
const PRICE = { input: 2, output: 10 };

let bed: TestBed;
let boss: PgBoss;
let worker: RunningWorker;
let api: ApiHarness;
const model = new FakeModelApi();
const triggers: string[] = [];

function config(): ConfigSnapshot {
  const onEvent = (action: string) => ({
    webhook: [],
    codehost: [{ events: [`pull_request.${action}`], repos: [] }],
    tracker: [],
  });
  return makeConfig(bed.dir, {
    targets: {
      model: {
        name: "model",
        runtime: "openai",
        baseUrl: model.url,
        model: "test-model",
        timeoutMs: 10_000,
        maxTurns: 4,
        credentials: [{ name: "a", secret: { kind: "inline", value: "key-usage" } }],
        price: PRICE,
      },
      budgeted: {
        name: "budgeted",
        runtime: "openai",
        baseUrl: model.url,
        model: "test-model",
        timeoutMs: 10_000,
        maxTurns: 4,
        credentials: [{ name: "a", secret: { kind: "inline", value: "key-budget" } }],
      },
      local: commandTarget("local", ["./bin/agent"]),
    },
    pipelines: {
      "pr-review": pipeline("pr-review", {
        agent: "helper",
        targets: ["model"],
        retainCheckout: false,
        trigger: onEvent("opened"),
      }),
      "pr-budget": {
        ...pipeline("pr-budget", {
          agent: "helper",
          targets: ["budgeted"],
          retainCheckout: false,
          trigger: onEvent("edited"),
        }),
        budget: { requests: 1 },
      },
      "pr-plain": pipeline("pr-plain", {
        agent: "helper",
        targets: ["local"],
        retainCheckout: false,
        trigger: onEvent("reopened"),
      }),
    },
    auth: { tokens: tokensBlock({ "usage-reader": ["evals:write", "triggers:read"] }) },
  });
}

// biome-ignore lint/suspicious/noExplicitAny: the answers are read as the JSON the API sends
async function get(path: string): Promise<{ status: number; body: any }> {
  const response = await api.request("GET", path, { token: TOKEN });
  return { status: response.status, body: await response.json() };
}

beforeAll(async () => {
  bed = await openTestBed();
  await model.start();
  // first a tool call (this worker has no tool endpoint, so the loop feeds back an error), then the answer
  const toolFirst: Answer = {
    status: 200,
    reply: (body: Record<string, unknown>) =>
      (body.messages as { role: string }[]).some((message) => message.role === "tool")
        ? { role: "assistant", content: '{"verdict": "approve"}' }
        : {
            role: "assistant",
            content: null,
            tool_calls: [{ id: "call_1", type: "function", function: { name: "look", arguments: "{}" } }],
          },
  };
  model.answer("key-usage", toolFirst);
  model.answer("key-budget", toolFirst);
  await writeScript(`${bed.dir}/bin/agent`, `#!/bin/sh\ncat > /dev/null\necho '{"verdict": "approve"}'\n`);
  boss = await startBoss({ url: bed.database.url, supervise: false });
  worker = await startWorker({
    config: config(),
    databaseUrl: bed.database.url,
    logger: captureLogger().logger,
  });
  for (const action of ["opened", "opened", "reopened", "edited"])
    triggers.push(
      await fire(bed.pool, boss, {
        kind: "codehost",
        source: "github",
        eventName: `pull_request.${action}`,
        payload: { action, number: triggers.length + 1 },
      }),
    );
  for (const id of triggers) await waitForTrigger(bed.pool, id);
  api = await startApi(bed.database.url, config());
}, 120_000);

afterAll(async () => {
  await worker?.stop(2_000);
  await api?.close();
  await boss?.stop({ graceful: false });
  await model.stop();
  await bed?.close();
});

describe("token usage reported by the runtime", () => {
  const input = CALLS_PER_RUN * USAGE_PER_CALL.prompt_tokens;
  const output = CALLS_PER_RUN * USAGE_PER_CALL.completion_tokens;
  const cost = (input * PRICE.input + output * PRICE.output) / 1e6;

  it("GET /evals/stats sums the openai runs' tokens per version × target, null for a command target", async () => {
    expect(model.count("key-usage", "/chat/completions")).toBe(RUNS * CALLS_PER_RUN);
    const review = await get("/evals/stats?pipeline=pr-review");
    expect(review.status).toBe(200);
    expect(review.body.versions).toEqual([
      expect.objectContaining({
        version: "1.0.0",
        target: "model",
        runs: RUNS,
        tokens: {
          runs: RUNS,
          input: RUNS * input,
          output: RUNS * output,
          meanInput: input,
          meanOutput: output,
          cacheRead: 0,
          requests: RUNS * CALLS_PER_RUN,
          costUsd: expect.closeTo(RUNS * cost, 9),
        },
      }),
    ]);
    const plain = await get("/evals/stats?pipeline=pr-plain");
    expect(plain.body.versions).toEqual([
      expect.objectContaining({ target: "local", runs: 1, tokens: null }),
    ]);
  });

  it("GET /trace/:id, svc trace and the trace page show the agent task's usage", async () => {
    const trace = await get(`/trace/${triggers[0]}`);
    expect(trace.status).toBe(200);
    const agent = trace.body.tasks.find((task: { kind: string }) => task.kind === "agent");
    expect(agent.usage).toEqual({
      input_tokens: input,
      output_tokens: output,
      cache_read_tokens: 0,
      cache_write_tokens: 0,
      requests: CALLS_PER_RUN,
      cost_usd: cost,
    });
    expect(renderTree(trace.body).join("\n")).toContain(
      `agent agent on model  completed  exit 0  tokens in ${input} out ${output}  2 requests  $${cost.toFixed(4)}`,
    );
    const page = await fetch(`${api.url}/ui/trace/${triggers[0]}`, {
      headers: { cookie: `svc_ui_token=${TOKEN}` },
    });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain(`<td>${input} / ${output} (2 req, $${cost.toFixed(4)})</td>`);
    const plain = await get(`/trace/${triggers[2]}`);
    const command = plain.body.tasks.find((task: { kind: string }) => task.kind === "agent");
    expect(command.usage).toBeNull();
  });
});

describe("a budget on the openai runtime", () => {
  it("budget.requests: 1 lets the first model call through the gateway and refuses the second: budget_exceeded, usage of one call", async () => {
    const trace = await get(`/trace/${triggers[3]}`);
    const [invocation] = trace.body.invocations;
    expect(invocation.diagnostic).toMatchObject({ code: "budget_exceeded", field: "budget.requests" });
    expect(invocation.diagnostic.message).toContain("spent its budget.requests of 1 model requests");
    expect(model.count("key-budget", "/chat/completions")).toBe(1);
    const agent = trace.body.tasks.find((task: { kind: string }) => task.kind === "agent");
    expect(agent).toMatchObject({
      status: "failed",
      usage: {
        input_tokens: USAGE_PER_CALL.prompt_tokens,
        output_tokens: USAGE_PER_CALL.completion_tokens,
        requests: 1,
      },
    });
  });
});
