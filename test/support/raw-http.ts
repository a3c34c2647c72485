import { request as httpRequest, type RequestOptions } from "node:http";

export interface RawAnswer {
  status: number;
  text: string;
}

/**
 * One HTTP request with exactly the headers given (node:http adds no Host when `setHost` is
 * false), over TCP or a unix socket (`socketPath`): what a browser, a proxy or a container sends,
 * byte for byte, where fetch would add or refuse headers of its own.
 */
export function rawRequest(options: RequestOptions, body?: string): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        ...options,
        headers: {
          ...options.headers,
          ...(body === undefined ? {} : { "content-length": String(Buffer.byteLength(body)) }),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}
