import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";

/**
 * What a scripted model answers for one API key: the script (a call of svc's `submit_note`, then a
 * final answer that fits the pipeline's `result.schema`), or one of the refusals the credential
 * rules tell apart.
 */
export type Behaviour =
  | {
      kind: "script";
      /** built-in tool calls the model makes first, one per turn, in order (an attack's reads) */
      calls?: ScriptedCall[];
      note: { title: string; body: string; tags?: string[] };
      /** the final answer: an object fitting result.schema, or text that is no JSON at all */
      result: Record<string, unknown> | string;
      /** the usage every answer reports; absent: counted from the prompt's and answer's lengths */
      usage?: { input_tokens: number; output_tokens: number };
    }
  | { kind: "error"; status: 401 | 403 | 429 | 500 | 529; retryAfter?: string };

/**
 * A call of one of the CLI's own tools by its name as offered (`Read`, `exec_command`, …) with its
 * arguments; `{cwd}` in them stands for the working directory the CLI told the model it runs in.
 */
export interface ScriptedCall {
  name: string;
  input: Record<string, unknown>;
}

/** One request as the fake received it. */
export interface SeenRequest {
  at: number;
  method: string;
  path: string;
  /** the credential the client sent (`x-api-key`, or the bearer token) */
  key: string;
  headers: Record<string, string | string[] | undefined>;
  body: Record<string, unknown> | undefined;
  /** the raw text, to search for what must never be sent (the run token) */
  text: string;
}

/** The time each answer finished, by request index: the last one is the model's final answer. */
export interface Answered {
  at: number;
  path: string;
}

/**
 * A loopback HTTP server for one model API: it records every request and leaves the answer to the
 * API's own protocol (`answer`). Both fakes (Anthropic Messages, OpenAI Responses) are one of these.
 */
export abstract class LoopbackModel {
  readonly requests: SeenRequest[] = [];
  readonly answered: Answered[] = [];
  readonly #behaviours = new Map<string, Behaviour>();
  readonly #holds = new Map<string, Promise<void>>();
  #server: Server | undefined;
  url = "";

  behave(key: string, behaviour: Behaviour): void {
    this.#behaviours.set(key, behaviour);
  }

  behaviourOf(key: string): Behaviour | undefined {
    return this.#behaviours.get(key);
  }

  /** Requests made with `key` are answered only once `until` settles: a test looks at the run meanwhile. */
  hold(key: string, until: Promise<void>): void {
    this.#holds.set(key, until);
  }

  /** Requests made with `key` (to `path`, when given). */
  seen(key: string, path?: string): SeenRequest[] {
    return this.requests.filter((r) => r.key === key && (!path || r.path.startsWith(path)));
  }

  /** The `index`th scripted call of `behaviour`, with `{cwd}` filled in from what the CLI sent. */
  protected scriptedCall(
    behaviour: Behaviour,
    index: number,
    request: SeenRequest,
  ): ScriptedCall | undefined {
    const call = behaviour.kind === "script" ? behaviour.calls?.[index] : undefined;
    if (!call) return undefined;
    const cwd = this.cwdOf(request.text) ?? "/nonexistent-cwd";
    const escaped = JSON.stringify(cwd).slice(1, -1);
    return JSON.parse(JSON.stringify(call).split("{cwd}").join(escaped)) as ScriptedCall;
  }

  /** The working directory the CLI states in its prompt, read as a model reads it. */
  protected abstract cwdOf(text: string): string | undefined;
  protected abstract keyOf(request: IncomingMessage): string;
  protected abstract answer(request: SeenRequest, response: ServerResponse): void;

  async start(): Promise<void> {
    this.#server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        const seen: SeenRequest = {
          at: performance.timeOrigin + performance.now(),
          method: request.method ?? "GET",
          path: request.url ?? "/",
          key: this.keyOf(request),
          headers: request.headers,
          body: parseBody(text),
          text,
        };
        this.requests.push(seen);
        response.on("finish", () =>
          this.answered.push({ at: performance.timeOrigin + performance.now(), path: seen.path }),
        );
        const held = this.#holds.get(seen.key);
        if (held) void held.then(() => this.answer(seen, response));
        else this.answer(seen, response);
      });
    });
    await new Promise<void>((resolve) => this.#server!.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.#server.address() as { port: number }).port}`;
  }

  async stop(): Promise<void> {
    this.#server?.closeAllConnections();
    await new Promise((resolve) => this.#server?.close(resolve));
  }
}

function parseBody(text: string): Record<string, unknown> | undefined {
  if (!text) return undefined;
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    return undefined; // not JSON: the raw text is kept beside it
  }
}

export function sendJson(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  response.writeHead(status, { "content-type": "application/json", ...headers });
  response.end(JSON.stringify(body));
}

/** Server-sent events as both APIs stream them: `event:` names the type, `data:` carries JSON. */
export function sendEvents(
  response: ServerResponse,
  events: { type: string; [key: string]: unknown }[],
): void {
  response.writeHead(200, {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    connection: "keep-alive",
  });
  for (const event of events) response.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
  response.end();
}

/** The tool the CLI offers for svc's `name`: Claude Code and Codex both prefix MCP tools `mcp__<server>__`. */
export function offeredTool(names: string[], name: string): string | undefined {
  return names.find((offered) => offered === name || offered.endsWith(`__${name}`));
}

/** The final answer's text: the result object as JSON, or the scripted text as it is. */
export function finalText(result: Record<string, unknown> | string): string {
  return typeof result === "string" ? result : JSON.stringify(result);
}

/** Rough token counts for the usage fields: a quarter of the characters, as tokenizers average. */
export function tokens(text: string): number {
  return Math.max(1, Math.ceil(text.length / 4));
}
