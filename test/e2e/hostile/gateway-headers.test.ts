import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { sendJson } from "../agents/loopback-model.ts";
import {
  agentCall,
  type GatewayRig,
  openGatewayRig,
  ScriptedModelApi,
  sse,
  targetOn,
} from "./gateway-rig.ts";

/** What the model API says of the credential's owner and sets on the client, besides what the agent needs. */
const ANSWER_HEADERS = {
  "openai-organization": "org-victim",
  "openai-project": "proj_victim",
  "anthropic-organization-id": "8c1f0a3e-victim",
  "set-cookie": "__cf_bm=tracking; path=/; HttpOnly",
  server: "cloudflare",
  "cf-ray": "8f00-LHR",
  // what the agent may read
  "x-request-id": "req_123",
  "request-id": "req_456",
  "x-ratelimit-remaining-requests": "99",
  "anthropic-ratelimit-tokens-remaining": "9000",
  "retry-after-ms": "10",
};

/**
 * The attack: an agent holds a gateway token for one target, and through it picks what the
 * credential acts as: another organisation or project the key can reach (`OpenAI-Organization`,
 * `OpenAI-Project`), an Anthropic beta that makes the API reach out to URLs of the agent's choosing
 * (`mcp-client-…`) or to the organisation's stored files; and it learns from the answers whom the
 * credential belongs to. The gateway passes, both ways, only the headers on its allow-lists
 * (worker/gateway/headers.ts).
 */
describe("hostile: an agent steers the credential with headers and reads its owner's from the answers", () => {
  let rig: GatewayRig;
  const api = new ScriptedModelApi();

  beforeAll(async () => {
    await api.start();
    rig = await openGatewayRig(inject("adminDatabaseUrl"));
    api.answerWith = (request, response) => {
      if (request.path.startsWith("/v1/messages")) {
        response.writeHead(200, { "content-type": "text/event-stream", ...ANSWER_HEADERS });
        const usage = { input_tokens: 1, output_tokens: 1 };
        response.end(
          sse([
            { type: "message_start", message: { id: "msg_1", usage } },
            { type: "message_delta", delta: { stop_reason: "end_turn" }, usage },
          ]),
        );
        return;
      }
      const usage = { input_tokens: 1, output_tokens: 1, input_tokens_details: { cached_tokens: 0 } };
      sendJson(
        response,
        200,
        { id: "resp_1", object: "response", status: "completed", usage },
        ANSWER_HEADERS,
      );
    };
  });

  afterAll(async () => {
    await rig?.close();
    await api.stop();
  });

  it("OpenAI: the organisation and project the agent names stay behind; the answer's owner headers and cookies do not reach the agent", async () => {
    const key = "sk-proj-headers-0001";
    const { lease } = await rig.attempt(targetOn("codex", api), key);
    const answer = await agentCall(rig.url, lease.token, {
      path: "/v1/responses",
      body: { model: "m", input: "hi" },
      headers: {
        "OpenAI-Organization": "org-attacker",
        "OpenAI-Project": "proj_attacker",
        "OpenAI-Beta": "assistants=v2",
        cookie: "session=stolen",
        "x-forwarded-for": "203.0.113.9",
        "user-agent": "OpenAI/JS 5.0.0",
        "x-stainless-lang": "js",
        "x-client-request-id": "mine-1",
      },
    });
    expect(answer.status, answer.text).toBe(200);
    const [seen] = api.seen(key);
    for (const name of ["openai-organization", "openai-project", "openai-beta", "cookie", "x-forwarded-for"])
      expect(seen?.headers, name).not.toHaveProperty(name);
    expect(seen?.headers).toMatchObject({
      authorization: `Bearer ${key}`,
      "content-type": "application/json",
      "user-agent": "OpenAI/JS 5.0.0",
      "x-stainless-lang": "js",
      "x-client-request-id": "mine-1",
    });
    expectAnswerHeaders(answer.headers);
  });

  it("Anthropic: only the betas that shape the one answer pass; the organisation id and cookies stay behind", async () => {
    const key = "sk-ant-headers-0002";
    const { lease } = await rig.attempt(targetOn("claude-code", api), key);
    const answer = await agentCall(rig.url, lease.token, {
      path: "/v1/messages",
      body: { model: "m", max_tokens: 10, stream: true, messages: [{ role: "user", content: "hi" }] },
      headers: {
        "anthropic-beta":
          "mcp-client-2025-04-04, interleaved-thinking-2025-05-14,files-api-2025-04-14,context-management-2025-06-27",
        "anthropic-dangerous-direct-browser-access": "true",
        "x-app": "cli",
      },
    });
    expect(answer.status, answer.text).toBe(200);
    const [seen] = api.seen(key);
    expect(seen?.headers).toMatchObject({
      "x-api-key": key,
      "anthropic-version": "2023-06-01",
      "anthropic-beta": "interleaved-thinking-2025-05-14,context-management-2025-06-27",
    });
    expect(seen?.headers).not.toHaveProperty("anthropic-dangerous-direct-browser-access");
    expect(seen?.headers).not.toHaveProperty("x-app");
    expectAnswerHeaders(answer.headers);
    // what was left behind is in the worker's log, for an agent that breaks without it
    const dropped = rig.lines
      .map((text) => JSON.parse(text) as { event?: string; headers?: string[] })
      .find((line) => line.event === "gateway.headers_dropped" && line.headers?.includes("x-app"));
    expect(dropped?.headers).toEqual(
      expect.arrayContaining([
        "anthropic-beta: mcp-client-2025-04-04",
        "anthropic-beta: files-api-2025-04-14",
      ]),
    );
  });
});

function expectAnswerHeaders(headers: Record<string, unknown>): void {
  for (const name of [
    "openai-organization",
    "openai-project",
    "anthropic-organization-id",
    "set-cookie",
    "server",
    "cf-ray",
  ])
    expect(headers, name).not.toHaveProperty(name);
  expect(headers).toMatchObject({
    "x-request-id": "req_123",
    "request-id": "req_456",
    "x-ratelimit-remaining-requests": "99",
    "anthropic-ratelimit-tokens-remaining": "9000",
    "retry-after-ms": "10",
  });
}
