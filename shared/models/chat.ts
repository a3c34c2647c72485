import { modelHttp } from "./http.ts";

export interface ChatMessage {
  role: "system" | "user" | "assistant";
  content: string;
}

export interface ChatResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
}

export interface ChatRequest {
  baseUrl: string;
  model: string;
  /** undefined for an endpoint that takes no key (a local model server) */
  key: string | undefined;
  messages: ChatMessage[];
  timeoutMs: number;
  signal?: AbortSignal;
}

/**
 * One OpenAI-compatible chat-completions request, for callers outside the worker (`/ask`, query
 * rewriting). The key goes into the authorization header and nowhere else; errors other than
 * the transport's come back as a status for the caller's credential rules.
 */
export async function chatCompletion(request: ChatRequest): Promise<ChatResponse> {
  const response = await modelHttp.post(`${request.baseUrl.replace(/\/+$/, "")}/chat/completions`, {
    json: { model: request.model, messages: request.messages },
    headers: request.key ? { authorization: `Bearer ${request.key}` } : {},
    timeout: { request: request.timeoutMs },
    retry: { limit: 0 },
    throwHttpErrors: false,
    responseType: "text",
    ...(request.signal ? { signal: request.signal } : {}),
  });
  let body: unknown = response.body;
  try {
    body = JSON.parse(response.body);
  } catch {
    // a non-JSON error page: kept as text for the reason
  }
  return { status: response.statusCode, headers: response.headers, body };
}

/** The assistant's text of a chat-completions answer, if it has one. */
export function replyText(body: unknown): string | undefined {
  const choices = (body as { choices?: { message?: { content?: unknown } }[] } | null)?.choices;
  const value = choices?.[0]?.message?.content;
  return typeof value === "string" ? value : undefined;
}

/** true for got's timeout errors */
export function isTimeout(error: unknown): boolean {
  return (error as { code?: string }).code === "ETIMEDOUT" || (error as Error).name === "TimeoutError";
}
