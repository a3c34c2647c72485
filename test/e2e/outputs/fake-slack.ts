import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";

/**
 * A fake Slack Web API on loopback: `POST /api/<method>` with a bearer bot token, form-encoded or
 * JSON arguments, answering `{ ok: true, ... }` or `{ ok: false, error }` as Slack does.
 */
export interface SlackMessage {
  channel: string;
  ts: string;
  text: string;
  blocks?: unknown[];
  thread_ts?: string;
  metadata?: { event_type: string; event_payload: Record<string, unknown> };
  token: string;
}

export interface FakeSlack {
  url: string;
  messages: SlackMessage[];
  calls: { method: string; authorization: string | undefined }[];
  close(): Promise<void>;
}

function reply(res: ServerResponse, body: unknown) {
  res.writeHead(200, { "content-type": "application/json; charset=utf-8" });
  res.end(JSON.stringify(body));
}

async function readArgs(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString("utf8");
  if ((req.headers["content-type"] ?? "").includes("application/json")) return text ? JSON.parse(text) : {};
  const args: Record<string, unknown> = {};
  for (const [key, value] of new URLSearchParams(text)) {
    // the client sends nested arguments (blocks, metadata) as JSON strings
    args[key] = /^[[{]/.test(value) ? JSON.parse(value) : value;
  }
  return args;
}

export async function startFakeSlack(options: { tokens: string[]; channels: string[] }): Promise<FakeSlack> {
  const messages: SlackMessage[] = [];
  const calls: FakeSlack["calls"] = [];
  let clock = 1_700_000_000;
  const server: Server = createServer((req, res) => {
    void (async () => {
      const method = new URL(req.url ?? "/", "http://x").pathname.replace(/^\/api\//, "");
      calls.push({ method, authorization: req.headers.authorization });
      const args = await readArgs(req);
      const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1] ?? "";
      if (req.method !== "POST")
        return reply(res, { ok: false, error: "method_not_supported_for_channel_type" });
      if (!options.tokens.includes(token)) return reply(res, { ok: false, error: "invalid_auth" });
      const channel = String(args.channel ?? "");
      if (!options.channels.includes(channel)) return reply(res, { ok: false, error: "channel_not_found" });
      switch (method) {
        case "chat.postMessage": {
          if (typeof args.text !== "string" || args.text === "")
            return reply(res, { ok: false, error: "no_text" });
          const ts = `${clock++}.000100`;
          const message: SlackMessage = {
            channel,
            ts,
            text: args.text,
            token,
            ...(args.blocks ? { blocks: args.blocks as unknown[] } : {}),
            ...(args.thread_ts ? { thread_ts: String(args.thread_ts) } : {}),
            ...(args.metadata ? { metadata: args.metadata as SlackMessage["metadata"] } : {}),
          };
          messages.push(message);
          return reply(res, { ok: true, channel, ts, message: { type: "message", text: message.text, ts } });
        }
        case "chat.getPermalink":
          return reply(res, {
            ok: true,
            channel,
            permalink: `https://chat.test/archives/${channel}/p${String(args.message_ts).replace(".", "")}`,
          });
        case "conversations.history":
          return reply(res, {
            ok: true,
            messages: messages.filter((m) => m.channel === channel && !m.thread_ts).reverse(),
            has_more: false,
          });
        default:
          return reply(res, { ok: false, error: "unknown_method" });
      }
    })().catch((error) => {
      res.writeHead(500);
      res.end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}/api`,
    messages,
    calls,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
