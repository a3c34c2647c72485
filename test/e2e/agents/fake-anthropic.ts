import type { IncomingMessage, ServerResponse } from "node:http";
import {
  type Behaviour,
  finalText,
  LoopbackModel,
  offeredTool,
  type ScriptedCall,
  type SeenRequest,
  sendEvents,
  sendJson,
  tokens,
} from "./loopback-model.ts";

const ERRORS = {
  401: ["authentication_error", "invalid x-api-key"],
  403: ["permission_error", "Your API key does not have permission to use the specified resource."],
  429: ["rate_limit_error", "This request would exceed your organization's rate limit."],
  500: ["api_error", "Internal server error"],
  529: ["overloaded_error", "Overloaded"],
} as const;

type Usage = { input_tokens: number; output_tokens: number };

type Block =
  | { type: "text"; text: string }
  | { type: "tool_use"; id: string; name: string; input: Record<string, unknown> };

interface Message {
  role: string;
  content: string | { type: string; id?: string; name?: string; tool_use_id?: string }[];
}

/**
 * The Anthropic Messages API on loopback, as Claude Code calls it: `POST /v1/messages` with
 * `x-api-key`, answered as a stream of server-sent events (message_start, content blocks with
 * text or tool_use deltas, message_delta with stop_reason and usage, message_stop), and the API's
 * error bodies for refused keys, rate limits and overload.
 */
export class FakeAnthropic extends LoopbackModel {
  #ids = 0;
  readonly #stalls = new Map<string, number>();

  /**
   * Requests of `key` sent once the conversation holds `results` tool results get no answer, their
   * connection left open until the fake stops: a model that stops responding mid-run, which only
   * the target's timeout ends.
   */
  stall(key: string, results: number): void {
    this.#stalls.set(key, results);
  }

  protected keyOf(request: IncomingMessage): string {
    const key = request.headers["x-api-key"];
    return typeof key === "string" ? key : (request.headers.authorization ?? "").replace(/^Bearer /, "");
  }

  protected cwdOf(text: string): string | undefined {
    // Claude Code's system prompt: "Primary working directory: <path>" (a JSON string here)
    return /Primary working directory: ([^\\"]+)/.exec(text)?.[1];
  }

  /** `{run_dir}` too: the RUN_DIR svc's claude-code runtime states in its system prompt for a review's result so far. */
  protected override scriptedCall(
    behaviour: Behaviour,
    index: number,
    request: SeenRequest,
  ): ScriptedCall | undefined {
    const call = super.scriptedCall(behaviour, index, request);
    if (!call) return undefined;
    const runDir =
      /`\$RUN_DIR` in this run is `([^`\\"]+)`/.exec(request.text)?.[1] ?? "/nonexistent-run-dir";
    return JSON.parse(JSON.stringify(call).split("{run_dir}").join(runDir)) as ScriptedCall;
  }

  protected answer(request: SeenRequest, response: ServerResponse): void {
    const behaviour = this.behaviourOf(request.key) ?? { kind: "error", status: 401 };
    if (behaviour.kind === "error") {
      const [type, message] = ERRORS[behaviour.status];
      const headers: Record<string, string> = { "request-id": this.#id("req") };
      if (behaviour.retryAfter) headers["retry-after"] = behaviour.retryAfter;
      sendJson(
        response,
        behaviour.status,
        { type: "error", error: { type, message }, request_id: headers["request-id"] },
        headers,
      );
      return;
    }
    if (request.method === "GET" && request.path.startsWith("/v1/models")) {
      sendJson(response, 200, { data: [{ type: "model", id: "claude-sonnet-4-5" }], has_more: false });
      return;
    }
    const body = request.body ?? {};
    const stallAt = this.#stalls.get(request.key);
    if (stallAt !== undefined && toolResults((body.messages ?? []) as Message[]) >= stallAt) return;
    const tools = ((body.tools ?? []) as { name?: string }[]).map((tool) => tool.name ?? "");
    const called = calledTools((body.messages ?? []) as Message[]);
    const note = offeredTool(tools, "submit_note");
    const structured = tools.find((name) => name === "StructuredOutput");
    const scripted = this.scriptedCall(behaviour, toolResults((body.messages ?? []) as Message[]), request);
    let block: Block;
    if (scripted) {
      block = { type: "tool_use", id: this.#id("toolu"), name: scripted.name, input: scripted.input };
    } else if (note && !called.has(note)) {
      block = { type: "tool_use", id: this.#id("toolu"), name: note, input: behaviour.note };
    } else if (structured && !called.has(structured) && typeof behaviour.result !== "string") {
      block = { type: "tool_use", id: this.#id("toolu"), name: structured, input: behaviour.result };
    } else {
      block = { type: "text", text: finalText(behaviour.result) };
    }
    const usage = behaviour.usage;
    if (body.stream === true) this.#stream(response, String(body.model), block, request.text, usage);
    else sendJson(response, 200, this.#message(String(body.model), [block], request.text, usage));
  }

  #message(model: string, content: Block[], prompt: string, fixed?: Usage) {
    const output = JSON.stringify(content);
    return {
      id: this.#id("msg"),
      type: "message",
      role: "assistant",
      model,
      content,
      stop_reason: content.some((b) => b.type === "tool_use") ? "tool_use" : "end_turn",
      stop_sequence: null,
      usage: fixed ?? { input_tokens: tokens(prompt), output_tokens: tokens(output) },
    };
  }

  #stream(response: ServerResponse, model: string, block: Block, prompt: string, fixed?: Usage): void {
    const usage = {
      input_tokens: fixed?.input_tokens ?? tokens(prompt),
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
      output_tokens: 1,
    };
    const start =
      block.type === "text"
        ? { type: "text", text: "" }
        : { type: "tool_use", id: block.id, name: block.name, input: {} };
    const delta =
      block.type === "text"
        ? { type: "text_delta", text: block.text }
        : { type: "input_json_delta", partial_json: JSON.stringify(block.input) };
    const message = this.#message(model, [], prompt);
    sendEvents(response, [
      { type: "message_start", message: { ...message, stop_reason: null, usage } },
      { type: "content_block_start", index: 0, content_block: start },
      { type: "ping" },
      { type: "content_block_delta", index: 0, delta },
      { type: "content_block_stop", index: 0 },
      {
        type: "message_delta",
        delta: { stop_reason: block.type === "tool_use" ? "tool_use" : "end_turn", stop_sequence: null },
        usage: { output_tokens: fixed?.output_tokens ?? tokens(JSON.stringify(block)) },
      },
      { type: "message_stop" },
    ]);
  }

  #id(prefix: string): string {
    this.#ids += 1;
    return `${prefix}_fake${String(this.#ids).padStart(6, "0")}`;
  }
}

/** How many tool results the conversation holds: the scripted calls already answered. */
function toolResults(messages: Message[]): number {
  let count = 0;
  for (const message of messages) {
    if (typeof message.content === "string") continue;
    count += message.content.filter((block) => block.type === "tool_result").length;
  }
  return count;
}

/** The tools the conversation already called and got a result from. */
function calledTools(messages: Message[]): Set<string> {
  const names = new Map<string, string>();
  const called = new Set<string>();
  for (const message of messages) {
    if (typeof message.content === "string") continue;
    for (const block of message.content) {
      if (block.type === "tool_use" && block.id && block.name) names.set(block.id, block.name);
      if (block.type === "tool_result" && block.tool_use_id) {
        const name = names.get(block.tool_use_id);
        if (name) called.add(name);
      }
    }
  }
  return called;
}
