/**
 * Scripted agents for the orchestration tests: what a loopback OpenAI-compatible model answers as
 * an orchestrator or a task, decided from the conversation the worker sends, as a real model would.
 */

interface ToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

interface Message {
  role: string;
  content: string | null;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
}

/** A tool's answer as the conversation carries it: the call's name and arguments, and the result text. */
export interface ToolAnswer {
  name: string;
  args: Record<string, unknown>;
  text: string;
  /** the result parsed as JSON, when it is */
  json: Record<string, unknown> | undefined;
}

let calls = 0;

export function messagesOf(body: Record<string, unknown>): Message[] {
  return (body.messages ?? []) as Message[];
}

export function userText(body: Record<string, unknown>): string {
  return messagesOf(body).find((message) => message.role === "user")?.content ?? "";
}

function parse(text: string): Record<string, unknown> | undefined {
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/** Every tool answer of the conversation, oldest first. */
export function toolAnswers(body: Record<string, unknown>): ToolAnswer[] {
  const messages = messagesOf(body);
  const asked = new Map<string, ToolCall>();
  const answers: ToolAnswer[] = [];
  for (const message of messages) {
    for (const call of message.tool_calls ?? []) asked.set(call.id, call);
    if (message.role !== "tool" || !message.tool_call_id) continue;
    const call = asked.get(message.tool_call_id);
    const text = message.content ?? "";
    answers.push({
      name: call?.function.name ?? "",
      args: call ? (JSON.parse(call.function.arguments) as Record<string, unknown>) : {},
      text,
      json: parse(text),
    });
  }
  return answers;
}

/** The answers to the most recent assistant message's tool calls. */
export function lastAnswers(body: Record<string, unknown>): ToolAnswer[] {
  const messages = messagesOf(body);
  const last = [...messages].reverse().find((message) => message.role === "assistant");
  const ids = new Set((last?.tool_calls ?? []).map((call) => call.id));
  return toolAnswers(body).filter((_answer, index, all) => index >= all.length - ids.size);
}

export function call(name: string, args: Record<string, unknown>): ToolCall {
  calls += 1;
  return { id: `call_${calls}`, type: "function", function: { name, arguments: JSON.stringify(args) } };
}

export function useTools(...toolCalls: ToolCall[]): Record<string, unknown> {
  return { role: "assistant", content: null, tool_calls: toolCalls };
}

export function answer(result: unknown): Record<string, unknown> {
  return { role: "assistant", content: `Here is the result.\n${JSON.stringify(result)}` };
}

/** The tools the model was offered in this request. */
export function offeredTools(body: Record<string, unknown>): string[] {
  return ((body.tools ?? []) as { function: { name: string } }[]).map((tool) => tool.function.name);
}

/**
 * The common orchestrator: creates `tasks` (unless list_tasks shows it already did), waits for all
 * of them, reads each completed one, then answers `finish(waited, read)`.
 */
export function orchestrator(
  tasks: Record<string, unknown>[],
  finish: (waited: ToolAnswer, read: ToolAnswer[]) => unknown,
): (body: Record<string, unknown>) => Record<string, unknown> {
  return (body) => {
    const all = toolAnswers(body);
    const last = lastAnswers(body);
    if (all.length === 0) return useTools(call("list_tasks", {}));
    const kind = last[0]?.name;
    if (kind === "list_tasks") {
      const existing = (last[0]!.json?.tasks ?? []) as { id: string }[];
      if (existing.length > 0)
        return useTools(call("wait_tasks", { ids: existing.map((task) => task.id), timeout_s: 60 }));
      return useTools(...tasks.map((task) => call("create_task", task)));
    }
    if (kind === "create_task")
      return useTools(call("wait_tasks", { ids: last.map((entry) => entry.json?.id), timeout_s: 60 }));
    if (kind === "wait_tasks") {
      const waited = last[0]!;
      if (!waited.json?.done) return useTools(call("wait_tasks", waited.args));
      const done = (waited.json.tasks as { id: string; status: string }[]).filter(
        (task) => task.status === "completed",
      );
      if (done.length === 0) return answer(finish(waited, []));
      return useTools(...done.map((task) => call("read_task_result", { id: task.id })));
    }
    const waited = [...all].reverse().find((entry) => entry.name === "wait_tasks")!;
    return answer(finish(waited, last));
  };
}
