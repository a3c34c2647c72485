import type { IncomingMessage } from "node:http";
import { brotliDecompressSync, gunzipSync, inflateSync, zstdDecompressSync } from "node:zlib";
import { errorAnswer } from "./apis.ts";
import type { ApiKind } from "./usage.ts";

/**
 * The largest model request the gateway reads: twice Anthropic's 32 MB limit on a Messages
 * request, and above OpenAI's 50 MB of images a request. A larger one is refused, not passed unread.
 */
const REQUEST_KEPT = 64 * 1024 * 1024;

/**
 * Request bodies as the SDKs and CLIs may compress them (Codex sends zstd to some backends): read
 * uncompressed, and sent on so (the API gets no `content-encoding`).
 */
const DECODERS: Record<string, (body: Buffer) => Buffer> = {
  identity: (body) => body,
  gzip: (body) => gunzipSync(body, { maxOutputLength: REQUEST_KEPT }),
  deflate: (body) => inflateSync(body, { maxOutputLength: REQUEST_KEPT }),
  br: (body) => brotliDecompressSync(body, { maxOutputLength: REQUEST_KEPT }),
  zstd: (body) => zstdDecompressSync(body, { maxOutputLength: REQUEST_KEPT }),
};

function tooLarge(api: ApiKind): { refused: { status: number; body: string } } {
  const message = `svc's gateway reads model requests of up to ${REQUEST_KEPT} bytes to count their tokens; this one is larger: send less in one request`;
  return { refused: errorAnswer(api, "too_large", message) };
}

export type ModelRequest = { body: Buffer } | { refused: { status: number; body: string } };

/**
 * A model request's body, read whole and checked before it goes upstream, so what the API gets is
 * exactly what the gateway judged: the JSON it parsed, written out again (a body with a key twice
 * reaches the API with the one the gateway read). On its way it
 * - asks a Chat Completions stream for its usage (`stream_options.include_usage`): without it
 *   the stream reports none and the call would be counted by the estimate alone;
 * - refuses a Responses request with `background`, whose tokens are spent after its answer,
 *   where the gateway cannot count them against the budget.
 * Undefined: the agent went away before it had sent the whole body.
 */
export async function readModelRequest(
  request: IncomingMessage,
  api: ApiKind,
  path: string,
): Promise<ModelRequest | undefined> {
  const read = await readBody(request);
  if (read === "gone") return undefined;
  if (read === "too large") return tooLarge(api);
  const encoding = String(request.headers["content-encoding"] ?? "identity")
    .trim()
    .toLowerCase();
  const decode = DECODERS[encoding];
  if (!decode) {
    const message = `svc's gateway reads model requests sent as JSON, plain or compressed (${Object.keys(DECODERS).join(", ")}); content-encoding ${encoding.slice(0, 50)} is none of them`;
    return { refused: errorAnswer(api, "invalid", message) };
  }
  let text: string;
  try {
    text = decode(read).toString("utf8");
  } catch (error) {
    // past the limit once inflated (a compression bomb), or not what its encoding says
    if ((error as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE") return tooLarge(api);
    const message = `the body of ${path} is not valid ${encoding}: svc's gateway could not read it`;
    return { refused: errorAnswer(api, "invalid", message) };
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (!body || typeof body !== "object" || Array.isArray(body)) {
    const message = `the body of ${path} must be a JSON object: svc's gateway reads it before the model API does`;
    return { refused: errorAnswer(api, "invalid", message) };
  }
  const fields = body as Record<string, unknown>;
  if (path === "/v1/responses" && fields.background != null && fields.background !== false) {
    const message =
      "svc's gateway does not forward `background: true`: a background response spends its tokens after this request is answered, where the gateway cannot count them against the run's budget; send the request without `background`";
    return { refused: errorAnswer(api, "unmetered", message, "background") };
  }
  if (path === "/v1/chat/completions" && fields.stream != null && fields.stream !== false) {
    const options = fields.stream_options;
    fields.stream_options = {
      ...(options && typeof options === "object" ? options : {}),
      include_usage: true,
    };
  }
  return { body: Buffer.from(JSON.stringify(fields)) };
}

/**
 * The whole body, or what stopped it: past the limit the rest is read and dropped, so the agent
 * still gets its answer (a destroyed request would take the connection, and the answer, with it).
 */
function readBody(request: IncomingMessage): Promise<Buffer | "too large" | "gone"> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size <= REQUEST_KEPT) chunks.push(chunk);
      else if (chunks.length) chunks.length = 0;
    });
    request.on("end", () => resolve(size > REQUEST_KEPT ? "too large" : Buffer.concat(chunks)));
    request.on("close", () => resolve("gone"));
    request.on("error", () => resolve("gone"));
  });
}
