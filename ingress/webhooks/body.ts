import type { IncomingMessage } from "node:http";

export type RawBody = { ok: true; body: Buffer } | { ok: false; reason: "too_large" | "aborted" };

/**
 * The body exactly as received (signatures are computed over these bytes), refused as soon as it
 * passes `limit` — by its Content-Length before reading a byte, or while streaming when the
 * caller sent none or lied.
 */
export function readRawBody(req: IncomingMessage, limit: number): Promise<RawBody> {
  const declared = Number(req.headers["content-length"] ?? Number.NaN);
  if (Number.isFinite(declared) && declared > limit)
    return Promise.resolve({ ok: false, reason: "too_large" });
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (result: RawBody) => {
      if (settled) return;
      settled = true;
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onAbort);
      req.off("aborted", onAbort);
      resolve(result);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        // stop buffering; the 413 answer closes the connection, which discards the rest
        req.pause();
        settle({ ok: false, reason: "too_large" });
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () =>
      settle({ ok: true, body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size) });
    const onAbort = () => settle({ ok: false, reason: "aborted" });
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onAbort);
    req.on("aborted", onAbort);
  });
}
