import {
  type ClientRequest,
  Agent as HttpAgent,
  request as httpRequest,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type ServerResponse,
} from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";

// kept-alive connections to the model APIs and the daemon: a request costs no new TCP (and TLS) handshake
const agents = { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) };

/**
 * The request that carries a client's request on to `url` (a model API, or the daemon), on a
 * kept-alive connection. A client that goes away before its answer has ended takes it down with it.
 */
export function openUpstream(
  url: URL,
  request: IncomingMessage,
  response: ServerResponse,
  headers: OutgoingHttpHeaders,
): ClientRequest {
  const secure = url.protocol === "https:";
  const upstream = (secure ? httpsRequest : httpRequest)(url, {
    method: request.method,
    agent: secure ? agents.https : agents.http,
    headers,
  });
  response.on("close", () => {
    if (!response.writableFinished) upstream.destroy();
  });
  return upstream;
}

/** Answers with the gateway's own JSON (a refusal, an unreachable upstream); the request's body is read and dropped. */
export function answerJson(
  response: ServerResponse,
  request: IncomingMessage,
  answer: { status: number; body: string },
): void {
  request.resume();
  response.writeHead(answer.status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(answer.body),
  });
  response.end(answer.body);
}
