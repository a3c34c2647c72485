import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "../../shared/logger.ts";
import { passedHeaders } from "./headers.ts";
import { answerJson, openUpstream } from "./upstream.ts";

/**
 * What a sandboxed agent sends to svc itself (`/mcp`, `/knowledge`) over the gateway's socket: it
 * goes on to the daemon with the agent's own bearer token, which the daemon checks as it checks any
 * caller's. The worker's connection to the daemon may come from loopback, so the request carries a
 * `Forwarded` header: the daemon then never takes it for the local client with `*` (the loopback
 * rule, shared/loopback-client.ts), and one without a token is refused here before it leaves.
 */
export function forwardToDaemon(
  daemonUrl: string | undefined,
  path: string,
  query: string,
  request: IncomingMessage,
  response: ServerResponse,
  logger: Logger,
): void {
  if (!/^Bearer\s+\S+$/i.test(request.headers.authorization ?? "")) {
    answer(response, request, 401, "svc's gateway forwards to the daemon only a request with a bearer token");
    return;
  }
  if (!daemonUrl) {
    answer(
      response,
      request,
      502,
      "svc's gateway knows no daemon address (set SVC_DAEMON_URL for the worker)",
    );
    return;
  }
  const url = new URL(`${daemonUrl.replace(/\/+$/, "")}${path}${query}`);
  const upstream = openUpstream(url, request, response, {
    ...passedHeaders(request.headers),
    authorization: request.headers.authorization as string,
    forwarded: 'for="_svc-sandbox"',
  });
  upstream.on("error", (error) => {
    logger.warn("gateway: the daemon could not be reached for a sandboxed agent", {
      event: "gateway.daemon_failed",
      error: (error as NodeJS.ErrnoException).code ?? error.message,
    });
    if (response.headersSent) response.destroy();
    else answer(response, request, 502, "svc's gateway could not reach the daemon");
  });
  upstream.on("response", (reply) => {
    response.writeHead(reply.statusCode ?? 502, reply.statusMessage, passedHeaders(reply.headers));
    // an MCP stream (SSE) passes as it comes, with back-pressure both ways
    reply.pipe(response);
  });
  request.pipe(upstream);
}

/** The gateway's own answer to a request it does not forward, in the daemon's error shape. */
function answer(response: ServerResponse, request: IncomingMessage, status: number, message: string): void {
  const code = status === 401 ? "unauthenticated" : "bad_gateway";
  answerJson(response, request, { status, body: JSON.stringify({ error: { code, message } }) });
}
