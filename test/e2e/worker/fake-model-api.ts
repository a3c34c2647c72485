import { createServer, type Server } from "node:http";

export type Answer =
  | { status: 200; content?: string }
  /** successive chat completions answer these assistant messages in turn; the last one repeats */
  | { status: 200; messages: Record<string, unknown>[] }
  /** each chat completion answers what `reply` makes of the request body, after `delayMs` (the model's own time) */
  | { status: 200; reply: (body: Record<string, unknown>) => Record<string, unknown>; delayMs?: number }
  | { status: 401 | 403 }
  | { status: 429; retryAfter?: string }
  | { status: 400 | 401; errorCode: "token_revoked" | "token_expired" };

/** What every chat completion reports it used, as the real API's `usage` does. */
export const USAGE_PER_CALL = { prompt_tokens: 120, completion_tokens: 30, total_tokens: 150 };

export interface Request {
  path: string;
  key: string;
  /** the parsed JSON body of a POST */
  body?: Record<string, unknown>;
  /** when the request arrived and when its answer was sent (ms since the epoch) */
  receivedAt: number;
  answeredAt?: number;
}

/**
 * A real OpenAI-compatible HTTP server on loopback. Each API key answers as the test commands:
 * success, 401, 403, 429 with Retry-After, or a revoked/expired token error. Every request is recorded.
 */
export class FakeModelApi {
  readonly requests: Request[] = [];
  readonly #answers = new Map<string, Answer>();
  #server: Server | undefined;
  url = "";

  answer(key: string, answer: Answer): void {
    this.#answers.set(key, answer);
  }

  count(key: string, path?: string): number {
    return this.requests.filter((r) => r.key === key && (!path || r.path.endsWith(path))).length;
  }

  async start(): Promise<void> {
    this.#server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        const key = (request.headers.authorization ?? "").replace(/^Bearer /, "");
        const text = Buffer.concat(chunks).toString("utf8");
        const recorded: Request = {
          path: request.url ?? "",
          key,
          receivedAt: Date.now(),
          ...(text ? { body: JSON.parse(text) } : {}),
        };
        this.requests.push(recorded);
        const answer = this.#answers.get(key) ?? { status: 401 };
        const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
          response.writeHead(status, { "content-type": "application/json", ...headers });
          response.end(JSON.stringify(body));
          recorded.answeredAt = Date.now();
        };
        if ("reply" in answer && !request.url?.endsWith("/models")) {
          const message = answer.reply(recorded.body ?? {});
          const calls = Boolean(message.tool_calls);
          setTimeout(
            () =>
              send(200, {
                id: `chatcmpl-${this.requests.length}`,
                object: "chat.completion",
                choices: [{ index: 0, message, finish_reason: calls ? "tool_calls" : "stop" }],
                usage: USAGE_PER_CALL,
              }),
            answer.delayMs ?? 0,
          );
        } else if ("errorCode" in answer) {
          send(answer.status, {
            error: { code: answer.errorCode, message: `the token was ${answer.errorCode.slice(6)}` },
          });
        } else if (answer.status === 429) {
          send(
            429,
            { error: { code: "rate_limit_exceeded", message: "slow down" } },
            answer.retryAfter ? { "retry-after": answer.retryAfter } : {},
          );
        } else if (answer.status !== 200) {
          send(answer.status, { error: { code: "invalid_api_key", message: "no" } });
        } else if ("messages" in answer && !request.url?.endsWith("/models")) {
          const turn = this.requests.filter(
            (r) => r.key === key && r.path.endsWith("/chat/completions"),
          ).length;
          const message = answer.messages[Math.min(turn, answer.messages.length) - 1];
          const calls = Boolean(message?.tool_calls);
          send(200, {
            id: `chatcmpl-${turn}`,
            object: "chat.completion",
            choices: [{ index: 0, message, finish_reason: calls ? "tool_calls" : "stop" }],
            usage: USAGE_PER_CALL,
          });
        } else if (request.url?.endsWith("/models")) {
          send(200, { object: "list", data: [{ id: "test-model", object: "model" }] });
        } else {
          send(200, {
            id: "chatcmpl-1",
            object: "chat.completion",
            choices: [
              {
                index: 0,
                message: {
                  role: "assistant",
                  content: ("content" in answer ? answer.content : undefined) ?? '{"answer": "yes"}',
                },
                finish_reason: "stop",
              },
            ],
            usage: USAGE_PER_CALL,
          });
        }
      });
    });
    await new Promise<void>((resolve) => this.#server!.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.#server.address() as { port: number }).port}/v1`;
  }

  async stop(): Promise<void> {
    await new Promise((resolve) => this.#server?.close(resolve));
  }
}
