import { describe, expect, it } from "vitest";
import { costOf, StreamUsage, usageOfBody } from "../../../worker/gateway/usage.ts";

const sse = (events: Record<string, unknown>[]) =>
  events.map((event) => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`).join("");

/** The stream fed in pieces of `size` bytes, as a socket may cut it. */
function read(text: string, size: number) {
  const scanner = new StreamUsage();
  const bytes = Buffer.from(text);
  for (let at = 0; at < bytes.length; at += size) scanner.push(bytes.subarray(at, at + size));
  return scanner.end();
}

describe("the gateway reads usage from answers as they pass", () => {
  const anthropic = sse([
    {
      type: "message_start",
      message: {
        id: "m",
        usage: {
          input_tokens: 12,
          cache_creation_input_tokens: 5,
          cache_read_input_tokens: 100,
          output_tokens: 1,
        },
      },
    },
    { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: 'ünïcödé usage "usage"' } },
    { type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 42 } },
    { type: "message_stop" },
  ]);

  it("Anthropic's stream: the prompt from message_start (cache included), the output from the last message_delta, however the bytes are cut", () => {
    const expected = { input: 117, output: 42, cacheRead: 100, cacheWrite: 5 };
    for (const size of [1, 3, 7, 64, 100_000]) expect(read(anthropic, size)).toEqual(expected);
  });

  it("OpenAI Responses' stream: response.completed; Chat Completions: the last chunk's usage", () => {
    const responses = sse([
      { type: "response.created", response: { id: "r", usage: null } },
      {
        type: "response.completed",
        response: {
          id: "r",
          usage: { input_tokens: 30, input_tokens_details: { cached_tokens: 10 }, output_tokens: 4 },
        },
      },
    ]);
    expect(read(responses, 5)).toEqual({ input: 30, output: 4, cacheRead: 10, cacheWrite: 0 });
    const chat = `data: ${JSON.stringify({ choices: [{ delta: { content: "x" } }], usage: null })}\n\ndata: ${JSON.stringify(
      { choices: [], usage: { prompt_tokens: 9, completion_tokens: 2 } },
    )}\n\ndata: [DONE]\n\n`;
    expect(read(chat, 2)).toEqual({ input: 9, output: 2, cacheRead: 0, cacheWrite: 0 });
  });

  it("a JSON answer's usage; none in a stream or body that carries none", () => {
    expect(usageOfBody(JSON.stringify({ usage: { prompt_tokens: 3, completion_tokens: 1 } }))).toEqual({
      input: 3,
      output: 1,
      cacheRead: 0,
      cacheWrite: 0,
    });
    expect(usageOfBody("<html>")).toBeUndefined();
    expect(read(sse([{ type: "ping" }]), 4)).toBeUndefined();
  });

  it("prices cached input at cache_read, the rest at input, output at output (USD per million)", () => {
    const usage = { input: 1_000_000, output: 100_000, cacheRead: 500_000, cacheWrite: 0 };
    expect(costOf(usage, { input: 3, output: 15, cacheRead: 0.3 })).toBeCloseTo(1.5 + 0.15 + 1.5, 9);
    expect(costOf(usage, { input: 3, output: 15 })).toBeCloseTo(3 + 1.5, 9);
    expect(costOf(usage, undefined)).toBe(0);
  });
});
