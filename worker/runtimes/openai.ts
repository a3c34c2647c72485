import { appendFile } from "node:fs/promises";
import { DEFAULT_MAX_TURNS } from "../../shared/config/agent-tools.ts";
import type { OpenAiTarget } from "../../shared/config/types.ts";
import { diagnostic } from "../../shared/diagnostics.ts";
import { modelHttp } from "../../shared/models/http.ts";
import type { CredentialCooldowns } from "../credentials/cooldowns.ts";
import type { CredentialSecrets } from "../credentials/secrets.ts";
import type { GatewayAccount, Lease } from "../gateway/account.ts";
import type { ModelGateway } from "../gateway/gateway.ts";
import type { Prompt } from "../run/prompt.ts";
import { lastJsonObject } from "../run/result-check.ts";
import type { RunAccess } from "../run/run-token.ts";
import type { AgentOutcome } from "./outcome.ts";
import type { OpenAiTool, ToolSession } from "./tool-client.ts";

export interface OpenAiRunInput {
  target: OpenAiTarget;
  prompt: Prompt;
  cooldowns: CredentialCooldowns;
  secrets: CredentialSecrets;
  transcriptFile: string;
  signal: AbortSignal;
  /** the run token and the daemon's tool endpoint; without an endpoint the model gets no tools */
  tools?: RunAccess;
  /** the attempt's account at the worker's gateway: each credential gets a token of it */
  gateway: { account: GatewayAccount; registry: Pick<ModelGateway, "clientUrl"> };
}

export interface ModelResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
}

/** One message of a chat-completions conversation (the fields this loop reads and writes). */
export interface ChatMessage {
  role: "system" | "user" | "assistant" | "tool";
  content: string | null;
  tool_calls?: ToolCallRequest[];
  tool_call_id?: string;
}

interface ToolCallRequest {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

function endpoint(baseUrl: string, path: string): string {
  return `${baseUrl.replace(/\/+$/, "")}/${path}`;
}

/** One chat-completions request to `baseUrl` (the gateway); the key goes into the header and nowhere else. */
export async function chatRequest(
  target: OpenAiTarget,
  access: { baseUrl: string; key: string },
  messages: ChatMessage[],
  tools: OpenAiTool[],
  signal: AbortSignal,
): Promise<ModelResponse> {
  const { baseUrl, key } = access;
  const response = await modelHttp.post(endpoint(baseUrl, "chat/completions"), {
    json: { model: target.model, messages, ...(tools.length ? { tools } : {}) },
    headers: { authorization: `Bearer ${key}` },
    timeout: { request: target.timeoutMs },
    retry: { limit: 0 },
    throwHttpErrors: false,
    responseType: "text",
    signal,
  });
  return { status: response.statusCode, headers: response.headers, body: parseBody(response.body) };
}

/** The cheapest authenticated request an OpenAI-compatible API answers: the model list. */
export async function probeRequest(target: OpenAiTarget, key: string): Promise<ModelResponse> {
  const response = await modelHttp.get(endpoint(target.baseUrl, "models"), {
    headers: { authorization: `Bearer ${key}` },
    timeout: { request: Math.min(target.timeoutMs, 10_000) },
    retry: { limit: 0 },
    throwHttpErrors: false,
    responseType: "text",
  });
  return { status: response.statusCode, headers: response.headers, body: parseBody(response.body) };
}

function parseBody(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function replyOf(body: unknown): ChatMessage | undefined {
  const message = (body as { choices?: { message?: ChatMessage }[] } | null)?.choices?.[0]?.message;
  return message && typeof message === "object" ? message : undefined;
}

/**
 * The target's first usable credential (skipping the cooling, the dead and the unresolved) as a
 * gateway lease: one per credential for the whole attempt, so every turn on it shares its token.
 */
function usableLease(input: OpenAiRunInput, leases: Map<string, Lease>): Lease | undefined {
  const { target, gateway } = input;
  for (const credential of target.credentials) {
    if (!input.cooldowns.isUsable(target.name, credential.name)) continue;
    const known = leases.get(credential.name);
    if (known) {
      if (!known.refusal) return known;
      continue;
    }
    const key = input.secrets.get(target.name, credential.name);
    if (key === undefined) continue;
    const lease = gateway.account.lease(target, credential.name, key);
    leases.set(credential.name, lease);
    return lease;
  }
  return undefined;
}

/**
 * The `openai` runtime as an agent loop: the model gets the run's tools (from the daemon's tool
 * protocol, with the run token's rights), each `tool_calls` answer is executed and fed back, until
 * a final message or `max_turns` model calls. Every call passes the worker's gateway, which
 * applies the credential rules (a 401/403/revoked/expired answer kills the credential, a 429
 * parks it): the same turn is then retried on the next credential; none left means the target is
 * unavailable.
 */
export async function runOpenAiAgent(input: OpenAiRunInput): Promise<AgentOutcome> {
  const { target } = input;
  const log = (line: string) => appendFile(input.transcriptFile, `${line}\n`);
  await log(`# request: model ${target.model} at ${target.baseUrl} (through the worker's gateway)`);
  await log(JSON.stringify({ system: input.prompt.system, user: input.prompt.user }));
  const session = await openTools(input, log);
  try {
    return await agentLoop(input, session, log);
  } finally {
    await session?.close();
  }
}

async function openTools(
  input: OpenAiRunInput,
  log: (line: string) => Promise<void>,
): Promise<ToolSession | undefined> {
  if (!input.tools?.mcpUrl) return undefined;
  try {
    // the MCP client is loaded by the first agent loop, not at worker start
    const { openToolSession } = await import("./tool-client.ts");
    const session = await openToolSession(input.tools);
    await log(`# tools: ${session.tools.map((tool) => tool.function.name).join(", ") || "none"}`);
    return session;
  } catch (error) {
    // the model still runs, without tools; the transcript says why
    await log(`# tools unavailable: ${(error as Error).message}`);
    return undefined;
  }
}

async function agentLoop(
  input: OpenAiRunInput,
  session: ToolSession | undefined,
  log: (line: string) => Promise<void>,
): Promise<AgentOutcome> {
  const { target } = input;
  const maxTurns = target.maxTurns ?? DEFAULT_MAX_TURNS;
  const messages: ChatMessage[] = [
    ...(input.prompt.system ? [{ role: "system" as const, content: input.prompt.system }] : []),
    { role: "user", content: input.prompt.user },
  ];
  let turn = 0;
  const leases = new Map<string, Lease>();
  while (turn < maxTurns) {
    const answer = await callModel(input, leases, messages, session?.tools ?? [], turn + 1, log);
    if (answer.kind !== "message") return answer.outcome;
    turn += 1;
    const reply = answer.message;
    messages.push({
      role: "assistant",
      content: reply.content ?? null,
      ...(reply.tool_calls?.length ? { tool_calls: reply.tool_calls } : {}),
    });
    if (!reply.tool_calls?.length) return finalResult(target, reply);
    // the calls of one answer are independent (the model asked for them together): they run at
    // once, so an orchestrator creating three tasks waits for one round trip, not three
    const results = await Promise.all(
      reply.tool_calls.map((call) => runToolCall(session, call, input.signal)),
    );
    for (const [index, call] of reply.tool_calls.entries()) {
      const result = results[index]!;
      await log(
        `# tool ${call.function?.name ?? ""} ${call.function?.arguments ?? ""}${result.isError ? " (error)" : ""}`,
      );
      await log(result.text);
      messages.push({ role: "tool", tool_call_id: call.id, content: result.text });
    }
    if (input.signal.aborted) return { kind: "aborted" };
  }
  await log(`# turn limit: ${maxTurns} model calls without a final message`);
  return {
    kind: "failed",
    diagnostic: diagnostic(
      "agent_turn_limit",
      `the agent on target ${target.name} made ${maxTurns} model calls without a final message; raise targets.${target.name}.max_turns or simplify the task`,
      { target: target.name, metadata: { maxTurns } },
    ),
  };
}

async function runToolCall(
  session: ToolSession | undefined,
  call: ToolCallRequest,
  signal: AbortSignal,
): Promise<{ text: string; isError: boolean }> {
  const name = call.function?.name ?? "";
  let args: unknown;
  try {
    args = JSON.parse(call.function?.arguments || "{}");
  } catch {
    args = undefined;
  }
  if (args === undefined) return { text: "error: the arguments are not valid JSON", isError: true };
  if (!session) return { text: "error: no tools are available in this run", isError: true };
  return session.call(name, args, signal);
}

function finalResult(target: OpenAiTarget, reply: ChatMessage): AgentOutcome {
  const text = typeof reply.content === "string" ? reply.content : undefined;
  const result = text === undefined ? undefined : lastJsonObject(text);
  if (result) return { kind: "result", result };
  return {
    kind: "failed",
    diagnostic: diagnostic("result_invalid", `the model on target ${target.name} answered no JSON object`, {
      target: target.name,
      path: "/",
    }),
  };
}

type ModelAnswer = { kind: "message"; message: ChatMessage } | { kind: "end"; outcome: AgentOutcome };

/** One model call of turn `turn`, failing over across credentials as the gateway judged them. */
async function callModel(
  input: OpenAiRunInput,
  leases: Map<string, Lease>,
  messages: ChatMessage[],
  tools: OpenAiTool[],
  turn: number,
  log: (line: string) => Promise<void>,
): Promise<ModelAnswer> {
  const { target, gateway } = input;
  for (let lease = usableLease(input, leases); lease; lease = usableLease(input, leases)) {
    let response: ModelResponse;
    try {
      const access = { baseUrl: gateway.registry.clientUrl(lease), key: lease.token };
      response = await chatRequest(target, access, messages, tools, input.signal);
    } catch (error) {
      return { kind: "end", outcome: await requestFailed(input, error, log) };
    }
    await log(`# turn ${turn}: response ${response.status} (credential ${lease.credential})`);
    await log(typeof response.body === "string" ? response.body : JSON.stringify(response.body));
    // the gateway refused the call for the budget and stopped the attempt
    if (input.signal.aborted) return { kind: "end", outcome: { kind: "aborted" } };
    // the gateway marked the credential dead or cooling: the same turn on the next one
    if (lease.refusal) continue;
    if (response.status < 200 || response.status >= 300) {
      const reason = `HTTP ${response.status}`;
      const failure = diagnostic(
        "agent_failed",
        `the model API of target ${target.name} answered ${reason}`,
        {
          target: target.name,
          metadata: { status: response.status },
        },
      );
      return { kind: "end", outcome: { kind: "unavailable", reason, diagnostic: failure } };
    }
    const message = replyOf(response.body);
    if (message) return { kind: "message", message };
    return { kind: "end", outcome: finalResult(target, { role: "assistant", content: null }) };
  }
  return {
    kind: "end",
    outcome: { kind: "unavailable", reason: `no usable credential on target ${target.name}` },
  };
}

async function requestFailed(
  input: OpenAiRunInput,
  error: unknown,
  log: (line: string) => Promise<void>,
): Promise<AgentOutcome> {
  const { target } = input;
  if (input.signal.aborted) return { kind: "aborted" };
  const code = (error as { code?: string }).code;
  if (code === "ETIMEDOUT" || (error as Error).name === "TimeoutError") {
    await log(`# timed out after ${target.timeoutMs} ms`);
    return {
      kind: "failed",
      diagnostic: diagnostic(
        "agent_timeout",
        `the model API of target ${target.name} did not answer within ${target.timeoutMs} ms`,
        { target: target.name, metadata: { timeoutMs: target.timeoutMs } },
      ),
    };
  }
  await log(`# request failed: ${code ?? (error as Error).message}`);
  return {
    kind: "unavailable",
    reason: `request failed (${code ?? "error"})`,
    diagnostic: diagnostic(
      "agent_failed",
      `the model API of target ${target.name} could not be reached (${code ?? "error"})`,
      { target: target.name },
    ),
  };
}
