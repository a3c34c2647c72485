import { LogLevel, type Logger as SlackLogger, WebClient } from "@slack/web-api";
import { PublishError, redact } from "./attempt.ts";
import type { Remote } from "./delivery.ts";

/**
 * The chat client (Slack Web API through @slack/web-api, `slackApiUrl` from
 * `channels.chat.api_url`). The client retries nothing itself: delivery.ts decides, after looking
 * for the message's marker (carried in Slack message metadata) so nothing is posted twice.
 */

/** The marker of a chat message: Slack renders no HTML comment, so it travels as message metadata. */
export const MARKER_EVENT = "svc_output";

const RETRYABLE_PLATFORM_ERRORS = new Set([
  "ratelimited",
  "internal_error",
  "fatal_error",
  "service_unavailable",
  "request_timeout",
]);

// the library would log to the console; svc's own log says what happened
const silent: SlackLogger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
  setLevel: () => {},
  getLevel: () => LogLevel.ERROR,
  setName: () => {},
};

export function chatFailure(error: unknown, token: string): PublishError {
  const e = error as {
    code?: string;
    data?: { error?: string };
    statusCode?: number;
    retryAfter?: number;
    message?: string;
  };
  switch (e.code) {
    case "slack_webapi_platform_error": {
      const code = e.data?.error ?? "unknown_error";
      return new PublishError({
        kind: RETRYABLE_PLATFORM_ERRORS.has(code) ? "retry" : "final",
        status: code,
        message: `the chat API answered ok: false, error: ${code}`,
      });
    }
    case "slack_webapi_rate_limited_error":
      return new PublishError({
        kind: "retry",
        status: "ratelimited",
        message: `the chat API rate-limited the call; retry after ${e.retryAfter ?? "?"}s`,
        ...(e.retryAfter !== undefined ? { retryAfter: e.retryAfter } : {}),
      });
    case "slack_webapi_http_error": {
      const status = e.statusCode ?? 0;
      return new PublishError({
        kind: status >= 500 || status === 429 ? "retry" : "final",
        status: String(status),
        message: redact(`the chat API answered HTTP ${status}`, [token]),
      });
    }
    default:
      return new PublishError({
        kind: "retry",
        status: "network",
        message: redact(e.message ?? String(error), [token]),
      });
  }
}

export interface ChatPost {
  channel: string;
  text: string;
  blocks?: Record<string, unknown>[];
  thread_ts?: string;
  /** the marker: which invocation and output key posted it */
  marker?: { invocation: string; key: string };
}

export class ChatPublisher {
  readonly #client: WebClient;
  readonly #token: string;

  constructor(options: { apiUrl: string; token: string }) {
    this.#token = options.token;
    this.#client = new WebClient(options.token, {
      slackApiUrl: options.apiUrl,
      retryConfig: { retries: 0 },
      rejectRateLimitedCalls: true,
      logger: silent,
    });
  }

  async post(message: ChatPost): Promise<Remote> {
    try {
      const answer = await this.#client.chat.postMessage({
        channel: message.channel,
        text: message.text,
        ...(message.blocks ? { blocks: message.blocks as never } : {}),
        ...(message.thread_ts ? { thread_ts: message.thread_ts } : {}),
        ...(message.marker
          ? { metadata: { event_type: MARKER_EVENT, event_payload: { ...message.marker } } }
          : {}),
        unfurl_links: false,
      });
      const ts = answer.ts ?? "";
      const permalink = await this.#permalink(answer.channel ?? message.channel, ts);
      return { id: `${answer.channel ?? message.channel}/${ts}`, url: permalink };
    } catch (error) {
      throw chatFailure(error, this.#token);
    }
  }

  /** The message carrying `marker`, among the channel's (or the thread's) latest messages. */
  async find(
    channel: string,
    marker: { invocation: string; key: string },
    threadTs?: string,
  ): Promise<Remote | undefined> {
    try {
      const answer = threadTs
        ? await this.#client.conversations.replies({
            channel,
            ts: threadTs,
            include_all_metadata: true,
            limit: 200,
          })
        : await this.#client.conversations.history({ channel, include_all_metadata: true, limit: 200 });
      const found = (answer.messages ?? []).find((entry) => {
        const metadata = (
          entry as { metadata?: { event_type?: string; event_payload?: Record<string, unknown> } }
        ).metadata;
        return (
          metadata?.event_type === MARKER_EVENT &&
          metadata.event_payload?.invocation === marker.invocation &&
          metadata.event_payload?.key === marker.key
        );
      });
      if (!found?.ts) return undefined;
      return { id: `${channel}/${found.ts}`, url: await this.#permalink(channel, found.ts) };
    } catch (error) {
      throw chatFailure(error, this.#token);
    }
  }

  async #permalink(channel: string, ts: string): Promise<string | null> {
    try {
      return (await this.#client.chat.getPermalink({ channel, message_ts: ts })).permalink ?? null;
    } catch {
      // the message is posted; a missing link only leaves the trace without a URL
      return null;
    }
  }
}
