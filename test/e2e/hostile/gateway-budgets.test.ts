import type { ServerResponse } from "node:http";
import { gzipSync, zstdCompressSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { sendJson } from "../agents/loopback-model.ts";
import {
  agentCall,
  type GatewayRig,
  logged,
  openGatewayRig,
  ScriptedModelApi,
  sse,
  targetOn,
} from "./gateway-rig.ts";

const BUDGET = { tokens: 5000 };
const CHAT = "/v1/chat/completions";

const chunk = (delta: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  id: "chatcmpl-1",
  object: "chat.completion.chunk",
  model: "m",
  choices: [{ index: 0, delta, finish_reason: null }],
  ...extra,
});

function startEvents(response: ServerResponse): void {
  response.writeHead(200, { "content-type": "text/event-stream" });
}

/**
 * The attack: an agent under `budget.tokens: 5000` asks for answers whose usage the gateway does
 * not see, and goes on spending. A Chat Completions stream reports usage only when asked; an
 * answer can be too large to read; a Responses request with `background` spends after its answer;
 * a stream can be cut before its usage arrives; a refused key can be tried again and again. Each
 * test drives the worker's real gateway against a model API on loopback, and checks that the run
 * is stopped at its budget, counted by the API's usage or, where none can be read, by the estimate
 * of the bytes (a quarter of a token each way, worker/gateway/usage.ts).
 */
describe("hostile: an agent spends past its budget where the gateway cannot see usage", () => {
  let rig: GatewayRig;
  const api = new ScriptedModelApi();

  beforeAll(async () => {
    await api.start();
    rig = await openGatewayRig(inject("adminDatabaseUrl"));
  });

  afterAll(async () => {
    await rig?.close();
    await api.stop();
  });

  /** Requests until the gateway refuses one for the budget: how many went through. */
  const spendUntilRefused = async (token: string, call: Parameters<typeof agentCall>[2]) => {
    for (let sent = 0; sent < 6; sent += 1) {
      const answer = await agentCall(rig.url, token, call);
      if (answer.status === 429 || answer.status === 402) return { accepted: sent, refusal: answer };
      expect(answer.status, answer.text).toBe(200);
    }
    return { accepted: 6, refusal: undefined };
  };

  it("a Chat Completions stream without stream_options: the gateway asks for usage, passes the answer as it came, and counts it", async () => {
    const key = "sk-chat-usage-0001";
    api.answerWith = (request, response) => {
      startEvents(response);
      const asked = (request.body?.stream_options as { include_usage?: boolean } | undefined)?.include_usage;
      const usage = asked ? { usage: null } : {};
      response.write(sse([chunk({ role: "assistant", content: "hi" }, usage)], false));
      if (asked)
        response.write(
          sse([{ ...chunk({}), choices: [], usage: { prompt_tokens: 1500, completion_tokens: 500 } }], false),
        );
      response.end("data: [DONE]\n\n");
    };
    const { account, lease } = await rig.attempt(targetOn("codex", api), key, BUDGET);
    const body = { model: "m", stream: true, messages: [{ role: "user", content: "hi" }] };
    const first = await agentCall(rig.url, lease.token, { path: CHAT, body });
    // the agent gets the usage chunk the gateway asked for, untouched
    expect(first.text).toContain('"prompt_tokens":1500');
    const { accepted, refusal } = await spendUntilRefused(lease.token, { path: CHAT, body });
    // 2000 tokens a call: the third (the first above, two more) passes the budget, the fourth is refused
    expect(accepted).toBe(2);
    expect(JSON.parse(refusal!.text)).toMatchObject({ error: { code: "insufficient_quota" } });
    const seen = api.seen(key);
    expect(seen).toHaveLength(3);
    for (const request of seen)
      expect(request.body).toMatchObject({ stream_options: { include_usage: true } });
    expect(account.spend).toMatchObject({ input: 4500, output: 1500, requests: 3 });
  });

  it("a stream that carries no usage at all is charged a token for every 4 bytes sent and received", async () => {
    const key = "sk-chat-nousage-0002";
    api.answerWith = (_, response) => {
      startEvents(response);
      response.end(
        `${sse([chunk({ role: "assistant", content: "x".repeat(2000) })], false)}data: [DONE]\n\n`,
      );
    };
    const { account, lease } = await rig.attempt(targetOn("codex", api), key, BUDGET);
    const body = { model: "m", stream: true, messages: [{ role: "user", content: "y".repeat(6000) }] };
    const { accepted, refusal } = await spendUntilRefused(lease.token, { path: CHAT, body });
    expect(refusal?.status).toBe(429);
    const seen = api.seen(key);
    expect(seen).toHaveLength(accepted);
    const sent = seen.reduce((total, request) => total + Math.ceil(Buffer.byteLength(request.text) / 4), 0);
    expect(account.spend.input).toBe(sent);
    expect(account.spend.input + account.spend.output).toBeGreaterThanOrEqual(BUDGET.tokens);
    await logged(rig.lines, "gateway.usage_estimated", account.ledger.invocationId);
  });

  it("Anthropic's stream: message_start and the cumulative message_delta are counted, cache included, though the delta leaves the cache out", async () => {
    const key = "sk-ant-stream-0003";
    api.answerWith = (_, response) => {
      startEvents(response);
      const start = {
        input_tokens: 100,
        cache_read_input_tokens: 4000,
        cache_creation_input_tokens: 0,
        output_tokens: 1,
      };
      const delta = { input_tokens: 100, cache_read_input_tokens: null, output_tokens: 1000 };
      response.end(
        sse([
          {
            type: "message_start",
            message: { id: "msg_1", type: "message", role: "assistant", usage: start },
          },
          { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "hi" } },
          { type: "message_delta", delta: { stop_reason: "end_turn" }, usage: delta },
          { type: "message_stop" },
        ]),
      );
    };
    const { account, lease } = await rig.attempt(targetOn("claude-code", api), key, BUDGET);
    const body = { model: "m", max_tokens: 1000, stream: true, messages: [{ role: "user", content: "hi" }] };
    const { accepted, refusal } = await spendUntilRefused(lease.token, { path: "/v1/messages", body });
    expect(accepted).toBe(1);
    expect(refusal?.status).toBe(402);
    expect(account.spend).toMatchObject({ input: 4100, output: 1000, cacheRead: 4000 });
  });

  it("a JSON answer over the 8 MiB read for its usage is charged by its bytes", async () => {
    const key = "sk-chat-large-0004";
    api.answerWith = (_, response) =>
      sendJson(response, 200, {
        id: "chatcmpl-2",
        object: "chat.completion",
        choices: [{ index: 0, message: { role: "assistant", content: "z".repeat(9 * 1024 * 1024) } }],
        usage: { prompt_tokens: 10, completion_tokens: 10 },
      });
    const { account, lease } = await rig.attempt(targetOn("codex", api), key, BUDGET);
    const body = { model: "m", messages: [{ role: "user", content: "hi" }] };
    const { accepted } = await spendUntilRefused(lease.token, { path: CHAT, body });
    expect(accepted).toBe(1);
    expect(account.spend.output).toBeGreaterThan((9 * 1024 * 1024) / 4);
  });

  it("a Responses request with background: true is refused in OpenAI's error shape and never reaches the API", async () => {
    const key = "sk-resp-background-0005";
    api.answerWith = (_, response) =>
      sendJson(response, 200, {
        id: "resp_1",
        object: "response",
        status: "queued",
        background: true,
        usage: null,
      });
    const { account, lease } = await rig.attempt(targetOn("codex", api), key, BUDGET);
    const answer = await agentCall(rig.url, lease.token, {
      path: "/v1/responses",
      body: { model: "m", input: "write a novel", background: true },
    });
    expect(answer.status).toBe(400);
    const { error } = JSON.parse(answer.text);
    expect(error).toMatchObject({
      type: "invalid_request_error",
      param: "background",
      code: "unsupported_parameter",
    });
    expect(error.message).toMatch(/background: true.*cannot count them against the run's budget/);
    expect(api.seen(key)).toEqual([]);
    expect(account.spend.requests).toBe(0);
  });

  it("a compressed request is read as the API would read it: zstd hides no background, and a bomb is refused", async () => {
    const key = "sk-resp-zstd-0008";
    api.answerWith = (_, response) =>
      sendJson(response, 200, { id: "resp_3", object: "response", status: "completed", usage: null });
    const { lease } = await rig.attempt(targetOn("codex", api), key, BUDGET);
    const hidden = zstdCompressSync(JSON.stringify({ model: "m", input: "hi", background: true }));
    const zstd = { "content-encoding": "zstd" };
    const refused = await agentCall(rig.url, lease.token, {
      path: "/v1/responses",
      body: hidden,
      headers: zstd,
    });
    expect(refused.status).toBe(400);
    expect(JSON.parse(refused.text)).toMatchObject({ error: { param: "background" } });
    const bomb = gzipSync(Buffer.alloc(65 * 1024 * 1024, " "));
    const gzip = { "content-encoding": "gzip" };
    const burst = await agentCall(rig.url, lease.token, { path: "/v1/responses", body: bomb, headers: gzip });
    expect(burst.status).toBe(413);
    expect(api.seen(key)).toEqual([]);
  });

  it("a Responses stream the API cuts before response.completed is charged by its bytes, and the agent sees the cut", async () => {
    const key = "sk-resp-cut-0006";
    api.answerWith = (_, response) => {
      startEvents(response);
      const deltas = Array.from({ length: 20 }, () => ({
        type: "response.output_text.delta",
        delta: "w".repeat(1000),
      }));
      const events = sse([{ type: "response.created", response: { id: "resp_2", usage: null } }, ...deltas]);
      response.write(events, () => response.destroy());
    };
    const { account, lease } = await rig.attempt(targetOn("codex", api), key, BUDGET);
    const answer = await agentCall(rig.url, lease.token, {
      path: "/v1/responses",
      body: { model: "m", input: "hi", stream: true },
    });
    expect(answer.complete).toBe(false);
    await logged(rig.lines, "gateway.usage_estimated", account.ledger.invocationId);
    expect(account.spend.output).toBeGreaterThanOrEqual(BUDGET.tokens);
    const next = await agentCall(rig.url, lease.token, {
      path: "/v1/responses",
      body: { model: "m", input: "hi", stream: true },
    });
    expect(next.status).toBe(429);
    expect(api.seen(key)).toHaveLength(1);
  });

  it("an Anthropic stream the agent cuts after message_start is charged by the bytes it got, not message_start's count", {
    timeout: 60_000,
  }, async () => {
    const key = "sk-ant-cut-0007";
    api.answerWith = (_, response) => {
      startEvents(response);
      const usage = { input_tokens: 10, output_tokens: 1 };
      const deltas = Array.from({ length: 30 }, () => ({
        type: "content_block_delta",
        index: 0,
        delta: { type: "text_delta", text: "v".repeat(1000) },
      }));
      // the answer goes on (held open): the agent stops reading it
      response.write(sse([{ type: "message_start", message: { id: "msg_2", usage } }, ...deltas]));
    };
    const { account, lease } = await rig.attempt(targetOn("claude-code", api), key, BUDGET);
    const body = { model: "m", max_tokens: 64000, stream: true, messages: [{ role: "user", content: "hi" }] };
    const answer = await agentCall(rig.url, lease.token, { path: "/v1/messages", body, cutAfter: 25_000 });
    expect(answer.complete).toBe(false);
    await logged(rig.lines, "gateway.usage_estimated", account.ledger.invocationId);
    expect(account.spend.output).toBeGreaterThanOrEqual(25_000 / 4);
    expect((await agentCall(rig.url, lease.token, { path: "/v1/messages", body })).status).toBe(402);
    expect(api.seen(key)).toHaveLength(1);
  });

  for (const status of [401, 403] as const) {
    it(`a key the API refused (${status}) is not tried again: the gateway answers the lease's next requests itself`, async () => {
      const key = `sk-refused-${status}`;
      api.answerWith = (_, response) =>
        sendJson(response, status, {
          type: "error",
          error: { type: "authentication_error", message: "invalid x-api-key" },
        });
      const { account, lease } = await rig.attempt(targetOn("claude-code", api, `refused${status}`), key);
      const body = { model: "m", max_tokens: 10, messages: [{ role: "user", content: "hi" }] };
      expect((await agentCall(rig.url, lease.token, { path: "/v1/messages", body })).status).toBe(status);
      for (let again = 0; again < 3; again += 1) {
        const answer = await agentCall(rig.url, lease.token, { path: "/v1/messages", body });
        expect(answer.status).toBe(401);
        expect(JSON.parse(answer.text)).toMatchObject({
          type: "error",
          error: {
            type: "authentication_error",
            message: expect.stringMatching(/refused credential c0 \(HTTP \d+\)/),
          },
        });
      }
      expect(api.seen(key)).toHaveLength(1);
      await account.close();
      const { rows } = await rig.pool.query(
        "SELECT state FROM svc.credential_cooldowns WHERE target = $1 AND credential = 'c0'",
        [`refused${status}`],
      );
      expect(rows).toEqual([{ state: "dead" }]);
    });
  }
});
