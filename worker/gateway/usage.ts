import { StringDecoder } from "node:string_decoder";
import type { TargetPrice } from "../../shared/config/types.ts";

/**
 * Tokens of model answers as the gateway read them. `input` is the whole prompt, cached parts
 * included (OpenAI counts it so; Anthropic reports its cache apart and is added up here).
 */
export interface Usage {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
}

/** What an attempt or an invocation spent: its tokens, its requests and their price. */
export interface Spend extends Usage {
  requests: number;
  /** USD, from the target's `price`; 0 without one */
  cost: number;
}

export const NO_SPEND: Readonly<Spend> = {
  input: 0,
  output: 0,
  cacheRead: 0,
  cacheWrite: 0,
  requests: 0,
  cost: 0,
};

export function addSpend(into: Spend, more: Readonly<Spend>): void {
  into.input += more.input;
  into.output += more.output;
  into.cacheRead += more.cacheRead;
  into.cacheWrite += more.cacheWrite;
  into.requests += more.requests;
  into.cost += more.cost;
}

/** Tokens as `budget.tokens` counts them: input (cached included) and output. */
export function tokensOf(usage: Usage): number {
  return usage.input + usage.output;
}

/** USD for `usage` at `price` (per million tokens); cache writes are priced as input. */
export function costOf(usage: Usage, price: TargetPrice | undefined): number {
  if (!price) return 0;
  const cached = Math.min(usage.cacheRead, usage.input);
  const fresh = usage.input - cached;
  return (
    (fresh * price.input + cached * (price.cacheRead ?? price.input) + usage.output * price.output) / 1e6
  );
}

const NONE: Readonly<Usage> = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };

const count = (value: unknown): number => (typeof value === "number" && value >= 0 ? value : 0);

/** The model APIs svc's runtimes speak, by the shape of their answers. */
export type ApiKind = "anthropic" | "openai";

/**
 * The `usage` object of one answer (a JSON body, or the event of a stream that carries it), or
 * undefined when it carries none. Anthropic: input, cache creation and cache read apart;
 * OpenAI Responses: input and output with cached input inside; Chat Completions: prompt and
 * completion tokens.
 */
export function usageOf(raw: unknown): Partial<Usage> | undefined {
  if (!raw || typeof raw !== "object") return undefined;
  const u = raw as Record<string, unknown>;
  if ("prompt_tokens" in u || "completion_tokens" in u) {
    const details = u.prompt_tokens_details as { cached_tokens?: unknown } | undefined;
    return {
      input: count(u.prompt_tokens),
      output: count(u.completion_tokens),
      cacheRead: count(details?.cached_tokens),
    };
  }
  const out: Partial<Usage> = {};
  if ("output_tokens" in u) out.output = count(u.output_tokens);
  if ("input_tokens_details" in u) {
    const details = u.input_tokens_details as { cached_tokens?: unknown } | undefined;
    out.input = count(u.input_tokens);
    out.cacheRead = count(details?.cached_tokens);
    return out;
  }
  if ("input_tokens" in u || "cache_read_input_tokens" in u || "cache_creation_input_tokens" in u) {
    const read = count(u.cache_read_input_tokens);
    const write = count(u.cache_creation_input_tokens);
    out.input = count(u.input_tokens) + read + write;
    out.cacheRead = read;
    out.cacheWrite = write;
  }
  return out;
}

/** The usage of a whole JSON answer (no stream): Messages, Responses and Chat Completions alike. */
export function usageOfBody(text: string): Usage | undefined {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return undefined; // not JSON: an answer without usage
  }
  const found = usageOf((body as { usage?: unknown } | null)?.usage);
  // a usage without both counts is not one the gateway can charge by: the estimate applies
  if (found?.input === undefined || found.output === undefined) return undefined;
  return { ...NONE, ...found };
}

/**
 * Tokens charged for `bytes` of a request or an answer whose usage the gateway could not read:
 * one token per 4 bytes, rounded up. Tokenizers average about 4 characters a token on text, and
 * the bytes on the wire also hold JSON and event framing, so this is no less than what the API
 * counts for the same text: a run never goes past its budget because an answer hid its usage.
 */
export function estimatedTokens(bytes: number): number {
  return Math.ceil(bytes / 4);
}

/**
 * What a model call is charged: its usage as the API reported it when the gateway read all of
 * it; otherwise (no usage, an answer too large to read, a stream cut before its last usage event)
 * the estimate of the bytes sent (input) and received (output), or what was read when that is more.
 */
export function chargedUsage(
  read: Usage | undefined,
  complete: boolean,
  sent: number,
  received: number,
): Usage {
  if (read && complete) return read;
  const partial = read ?? NONE;
  return {
    ...partial,
    input: Math.max(partial.input, estimatedTokens(sent)),
    output: Math.max(partial.output, estimatedTokens(received)),
  };
}

/**
 * Reads the usage out of a server-sent event stream as it passes, chunk by chunk, without holding
 * it back: only `data:` lines that mention "usage" are parsed. Anthropic sends the prompt's counts
 * in `message_start` and the running (cumulative) counts in `message_delta`; OpenAI Responses
 * sends it in `response.completed` (or `.incomplete`, `.failed`); Chat Completions in its last
 * chunk (the gateway asks for it, forward.ts). Counts are cumulative, so each field keeps its
 * largest value: a later event that leaves out the cache fields does not erase them.
 */
export class StreamUsage {
  readonly #decoder = new StringDecoder("utf8");
  #carry = "";
  #usage: Usage | undefined;
  #final = false;

  /** Whether the stream's last usage event was read (anything but Anthropic's `message_start`). */
  get final(): boolean {
    return this.#final;
  }

  push(chunk: Buffer): void {
    const text = this.#carry + this.#decoder.write(chunk);
    let start = 0;
    for (let end = text.indexOf("\n", start); end !== -1; end = text.indexOf("\n", start)) {
      this.#line(text, start, end);
      start = end + 1;
    }
    this.#carry = text.slice(start);
  }

  /** The usage read, once the stream ended (a last line without newline included). */
  end(): Usage | undefined {
    const rest = this.#carry + this.#decoder.end();
    if (rest) this.#line(rest, 0, rest.length);
    this.#carry = "";
    return this.#usage;
  }

  #line(text: string, start: number, end: number): void {
    if (!text.startsWith("data:", start)) return;
    const line = text.slice(start + 5, end);
    if (!line.includes('"usage"')) return;
    let event: Record<string, unknown>;
    try {
      event = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return; // a data line that is not JSON carries no usage the gateway can read
    }
    const nested = (event.message ?? event.response) as { usage?: unknown } | undefined;
    const found = usageOf(event.usage ?? nested?.usage);
    if (!found) return;
    const was = this.#usage ?? NONE;
    this.#usage = {
      input: Math.max(was.input, found.input ?? 0),
      output: Math.max(was.output, found.output ?? 0),
      cacheRead: Math.max(was.cacheRead, found.cacheRead ?? 0),
      cacheWrite: Math.max(was.cacheWrite, found.cacheWrite ?? 0),
    };
    if (event.type !== "message_start" && found.output !== undefined) this.#final = true;
  }
}
