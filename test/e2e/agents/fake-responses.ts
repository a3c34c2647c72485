import type { IncomingMessage, ServerResponse } from "node:http";
import {
  finalText,
  LoopbackModel,
  offeredTool,
  type SeenRequest,
  sendEvents,
  sendJson,
  tokens,
} from "./loopback-model.ts";

const ERRORS = {
  401: ["invalid_request_error", "invalid_api_key", "Incorrect API key provided."],
  403: ["invalid_request_error", "unsupported_country_region_territory", "Project does not have access."],
  429: ["requests", "rate_limit_exceeded", "Rate limit reached for requests."],
  500: ["server_error", "server_error", "The server had an error while processing your request."],
  529: ["server_error", "server_is_overloaded", "The engine is currently overloaded."],
} as const;

interface Tool {
  type: string;
  name?: string;
  tools?: Tool[];
}

interface InputItem {
  type?: string;
  name?: string;
  namespace?: string;
  call_id?: string;
}

type Item =
  | { type: "message"; id: string; text: string }
  | { type: "function_call"; id: string; callId: string; name: string; namespace?: string; args: string };

/**
 * The OpenAI Responses API on loopback, as Codex calls it: `POST /v1/responses` with a bearer key,
 * answered as server-sent events (response.created, output items with text or function-call
 * argument deltas, response.completed carrying usage), and the API's error bodies. Codex offers
 * MCP tools as a `namespace` tool (`mcp__svc`), so a call of `submit_note` names that namespace.
 */
export class FakeResponses extends LoopbackModel {
  #ids = 0;
  readonly #stalls = new Map<string, number>();

  /**
   * Requests of `key` sent once the conversation holds `outputs` tool outputs get no answer, their
   * connection left open until the fake stops: a model that stops responding mid-run, which only
   * the target's timeout ends.
   */
  stall(key: string, outputs: number): void {
    this.#stalls.set(key, outputs);
  }

  protected keyOf(request: IncomingMessage): string {
    return (request.headers.authorization ?? "").replace(/^Bearer /, "");
  }

  protected cwdOf(text: string): string | undefined {
    // Codex's environment context: <cwd><path></cwd>
    return /<cwd>([^<]+)<\/cwd>/.exec(text)?.[1];
  }

  protected answer(request: SeenRequest, response: ServerResponse): void {
    const behaviour = this.behaviourOf(request.key) ?? { kind: "error", status: 401 };
    if (behaviour.kind === "error") {
      const [type, code, message] = ERRORS[behaviour.status];
      const headers: Record<string, string> = { "x-request-id": this.#id("req") };
      if (behaviour.retryAfter) headers["retry-after"] = behaviour.retryAfter;
      sendJson(response, behaviour.status, { error: { message, type, param: null, code } }, headers);
      return;
    }
    if (request.method === "GET" && request.path.includes("/models")) {
      sendJson(response, 200, { object: "list", data: [{ id: "gpt-5", object: "model" }] });
      return;
    }
    const body = request.body ?? {};
    const input = (body.input ?? []) as InputItem[];
    const note = findTool((body.tools ?? []) as Tool[], "submit_note");
    const called = calledTools(input);
    const answered = input.filter((item) => item.type === "function_call_output").length;
    const stallAt = this.#stalls.get(request.key);
    if (stallAt !== undefined && answered >= stallAt) return;
    const scripted = this.scriptedCall(behaviour, answered, request);
    // a scripted call of one of svc's tools names it as offered, inside Codex's MCP namespace
    const svcTool = scripted ? findTool((body.tools ?? []) as Tool[], scripted.name) : undefined;
    const item: Item = scripted
      ? {
          type: "function_call",
          id: this.#id("fc"),
          callId: this.#id("call"),
          name: svcTool?.name ?? scripted.name,
          ...(svcTool?.namespace ? { namespace: svcTool.namespace } : {}),
          args: JSON.stringify(scripted.input),
        }
      : note && !called.has(note.name)
        ? {
            type: "function_call",
            id: this.#id("fc"),
            callId: this.#id("call"),
            name: note.name,
            ...(note.namespace ? { namespace: note.namespace } : {}),
            args: JSON.stringify(behaviour.note),
          }
        : { type: "message", id: this.#id("msg"), text: finalText(behaviour.result) };
    this.#stream(response, String(body.model), item, request.text, behaviour.usage);
  }

  #stream(
    response: ServerResponse,
    model: string,
    item: Item,
    prompt: string,
    fixed?: { input_tokens: number; output_tokens: number },
  ): void {
    const id = this.#id("resp");
    const base = { id, object: "response", created_at: Math.floor(Date.now() / 1000), model };
    const done = itemBody(item, "completed");
    const input = fixed?.input_tokens ?? tokens(prompt);
    const output = fixed?.output_tokens ?? tokens(JSON.stringify(done));
    const usage = {
      input_tokens: input,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: output,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: input + output,
    };
    const at = { item_id: item.id, output_index: 0 };
    const deltas =
      item.type === "message"
        ? [
            {
              type: "response.content_part.added",
              ...at,
              content_index: 0,
              part: { type: "output_text", text: "", annotations: [] },
            },
            { type: "response.output_text.delta", ...at, content_index: 0, delta: item.text },
            { type: "response.output_text.done", ...at, content_index: 0, text: item.text },
            {
              type: "response.content_part.done",
              ...at,
              content_index: 0,
              part: { type: "output_text", text: item.text, annotations: [] },
            },
          ]
        : [
            { type: "response.function_call_arguments.delta", ...at, delta: item.args },
            { type: "response.function_call_arguments.done", ...at, arguments: item.args },
          ];
    const events = [
      { type: "response.created", response: { ...base, status: "in_progress", output: [] } },
      { type: "response.in_progress", response: { ...base, status: "in_progress", output: [] } },
      { type: "response.output_item.added", output_index: 0, item: itemBody(item, "in_progress") },
      ...deltas,
      { type: "response.output_item.done", output_index: 0, item: done },
      { type: "response.completed", response: { ...base, status: "completed", output: [done], usage } },
    ];
    sendEvents(
      response,
      events.map((event, sequence) => ({ ...event, sequence_number: sequence })),
    );
  }

  #id(prefix: string): string {
    this.#ids += 1;
    return `${prefix}_fake${String(this.#ids).padStart(6, "0")}`;
  }
}

function itemBody(item: Item, status: "in_progress" | "completed") {
  if (item.type === "message") {
    const content = status === "completed" ? [{ type: "output_text", text: item.text, annotations: [] }] : [];
    return { type: "message", id: item.id, status, role: "assistant", content };
  }
  return {
    type: "function_call",
    id: item.id,
    call_id: item.callId,
    name: item.name,
    ...(item.namespace ? { namespace: item.namespace } : {}),
    arguments: status === "completed" ? item.args : "",
    status,
  };
}

/** svc's tool `name` as offered: a plain function, or a function inside an MCP namespace tool. */
function findTool(tools: Tool[], name: string): { name: string; namespace?: string } | undefined {
  const plain = offeredTool(
    tools.filter((tool) => tool.type === "function").map((tool) => tool.name ?? ""),
    name,
  );
  if (plain) return { name: plain };
  for (const space of tools.filter((tool) => tool.type === "namespace")) {
    const inner = offeredTool(
      (space.tools ?? []).map((tool) => tool.name ?? ""),
      name,
    );
    if (inner) return { name: inner, namespace: space.name ?? "" };
  }
  return undefined;
}

/** The tools the conversation already called and got an output from. */
function calledTools(input: InputItem[]): Set<string> {
  const names = new Map<string, string>();
  const called = new Set<string>();
  for (const item of input) {
    if (item.type === "function_call" && item.call_id && item.name) names.set(item.call_id, item.name);
    if (item.type === "function_call_output" && item.call_id) {
      const name = names.get(item.call_id);
      if (name) called.add(name);
    }
  }
  return called;
}
