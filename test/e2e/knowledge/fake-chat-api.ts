import { createServer, type Server } from "node:http";

export type Behaviour =
  /** answers `reply` only when the prompt holds `needle`; otherwise 422 (the passage was not sent) */
  | { kind: "answer"; needle: string; reply: string }
  /** answers `reply` whatever it is asked, like a model that misses the point */
  | { kind: "reply"; reply: string }
  | { kind: "status"; status: number }
  /** never answers: the caller's time-out must end the request */
  | { kind: "hang" };

export interface ChatRequestSeen {
  key: string;
  model: string;
  prompt: string;
  /** Date.now() when the request arrived */
  at: number;
}

/**
 * An OpenAI-compatible chat-completions server on loopback: POST /v1/chat/completions with a
 * bearer key, answers by key as the test says, records every request in order.
 */
export class FakeChatApi {
  readonly requests: ChatRequestSeen[] = [];
  readonly #behaviour = new Map<string, Behaviour>();
  #server: Server | undefined;
  url = "";

  on(key: string, behaviour: Behaviour): void {
    this.#behaviour.set(key, behaviour);
  }

  keysSeen(): string[] {
    return this.requests.map((request) => request.key);
  }

  async start(): Promise<void> {
    this.#server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        const send = (status: number, body: unknown) => {
          response.writeHead(status, { "content-type": "application/json" });
          response.end(JSON.stringify(body));
        };
        if (request.method !== "POST" || request.url !== "/v1/chat/completions") {
          send(404, { error: { message: "not found", type: "invalid_request_error" } });
          return;
        }
        const key = (request.headers.authorization ?? "").replace(/^Bearer /, "");
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
          model: string;
          messages: { role: string; content: string }[];
        };
        const prompt = body.messages.map((m) => m.content).join("\n");
        this.requests.push({ key, model: body.model, prompt, at: Date.now() });
        const behaviour = this.#behaviour.get(key);
        if (!behaviour) {
          send(401, {
            error: {
              message: "Incorrect API key provided",
              type: "invalid_request_error",
              code: "invalid_api_key",
            },
          });
          return;
        }
        if (behaviour.kind === "hang") return;
        if (behaviour.kind === "status") {
          send(behaviour.status, { error: { message: `status ${behaviour.status}`, type: "server_error" } });
          return;
        }
        if (behaviour.kind === "answer" && !prompt.includes(behaviour.needle)) {
          send(422, { error: { message: "the prompt lacks the passage", type: "invalid_request_error" } });
          return;
        }
        send(200, {
          id: "chatcmpl-test",
          object: "chat.completion",
          model: body.model,
          choices: [
            { index: 0, message: { role: "assistant", content: behaviour.reply }, finish_reason: "stop" },
          ],
        });
      });
    });
    await new Promise<void>((resolve) => this.#server!.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.#server.address() as { port: number }).port}/v1`;
  }

  async stop(): Promise<void> {
    this.#server?.closeAllConnections();
    await new Promise((resolve) => this.#server?.close(resolve));
  }
}
