import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "../../shared/logger.ts";
import type { Lease } from "./account.ts";
import { credentialHeaders, DEFAULT_BASE_URLS, errorAnswer, passedHeaders, upstreamUrl } from "./apis.ts";
import { answerJson, openUpstream } from "./upstream.ts";
import { costOf, NO_SPEND, StreamUsage, type Usage, usageOfBody } from "./usage.ts";
import { type CredentialStates, refusalOf } from "./verdict.ts";

/** The most of an answer's body kept to read its usage (JSON) or its error (not 2xx). */
const JSON_KEPT = 8 * 1024 * 1024;
const ERROR_KEPT = 64 * 1024;

export interface Forwarding {
  lease: Lease;
  path: string;
  query: string;
  /** a model call: counted, and its usage read */
  model: boolean;
}

/**
 * Forwards one request to the lease's target, with the real credential, and its answer back as it
 * arrives: every chunk is written on as it comes (a stream is never held back to be read), while
 * the usage events of a stream, or the body of a JSON answer, are read beside it. When the answer
 * ends, what it spent is added to the attempt's account, and an answer that refuses the
 * credential changes its state.
 */
export function forward(
  forwarding: Forwarding,
  request: IncomingMessage,
  response: ServerResponse,
  deps: { credentials: CredentialStates; logger: Logger },
): void {
  const { lease, path, query, model } = forwarding;
  const { account, target, api } = lease;
  const url = new URL(upstreamUrl(api, target.baseUrl ?? DEFAULT_BASE_URLS[api], path, query));
  if (model) account.record({ ...NO_SPEND, requests: 1 });
  const upstream = openUpstream(url, request, response, {
    ...passedHeaders(request.headers),
    ...credentialHeaders(api, lease.key),
    // the usage is read from the bytes as they pass: they must not be compressed
    "accept-encoding": "identity",
  });
  upstream.on("error", (error) => {
    deps.logger.warn(`gateway: the model API of target ${target.name} could not be reached`, {
      event: "gateway.upstream_failed",
      target: target.name,
      error: (error as NodeJS.ErrnoException).code ?? error.message,
    });
    if (response.headersSent) {
      response.destroy();
      return;
    }
    answerJson(
      response,
      request,
      errorAnswer(api, "upstream", `svc's gateway could not reach the model API of target ${target.name}`),
    );
  });
  upstream.on("response", (answer) => relay(forwarding, answer, response, deps));
  request.pipe(upstream);
}

function relay(
  { lease, model }: Forwarding,
  answer: IncomingMessage,
  response: ServerResponse,
  deps: { credentials: CredentialStates; logger: Logger },
): void {
  const status = answer.statusCode ?? 502;
  response.writeHead(status, answer.statusMessage, passedHeaders(answer.headers));
  const ok = status >= 200 && status < 300;
  const stream = ok && model && /text\/event-stream/i.test(String(answer.headers["content-type"] ?? ""));
  const usage = stream ? new StreamUsage() : undefined;
  const kept: Buffer[] = [];
  let keptBytes = 0;
  const limit = ok ? (model && !stream ? JSON_KEPT : 0) : ERROR_KEPT;
  answer.on("data", (chunk: Buffer) => {
    if (!response.write(chunk)) {
      answer.pause();
      response.once("drain", () => answer.resume());
    }
    if (usage) usage.push(chunk);
    else if (keptBytes < limit) {
      kept.push(chunk);
      keptBytes += chunk.length;
    }
  });
  let settled = false;
  const ended = (complete: boolean) => {
    if (settled) return;
    settled = true;
    const text = kept.length ? Buffer.concat(kept).toString("utf8") : "";
    // a stream cut short (the agent stopped, the API hung up) still counts what it reported so far
    if (model && ok) settle(lease, usage ? usage.end() : usageOfBody(text), deps.logger);
    if (!ok && complete) judge(lease, status, answer, text, deps);
    if (complete) response.end();
  };
  answer.on("end", () => ended(true));
  answer.on("close", () => ended(false));
  answer.on("error", () => response.destroy());
}

/** The answer's usage into the account; a budgeted invocation's total is read again beside it. */
function settle(lease: Lease, usage: Usage | undefined, logger: Logger): void {
  const { account } = lease;
  if (usage) account.record({ ...usage, requests: 0, cost: costOf(usage, lease.target.price) });
  if (!account.budget) return;
  account.ledger.refresh().catch((error: Error) =>
    // the total read at the attempt's start, plus this worker's answers, still bounds the run
    logger.warn("gateway: reading the invocation's usage failed", {
      event: "gateway.usage_read_failed",
      invocation: account.ledger.invocationId,
      error: error.message,
    }),
  );
}

/** A refused credential's new state: the attempt's end waits for it to be written. */
function judge(
  lease: Lease,
  status: number,
  answer: IncomingMessage,
  text: string,
  deps: { credentials: CredentialStates; logger: Logger },
): void {
  const refusal = refusalOf(status, answer.headers, text);
  if (!refusal) return;
  lease.refusal = { kind: refusal.kind, reason: refusal.reason };
  const { target, credential } = lease;
  const write =
    refusal.kind === "dead"
      ? deps.credentials.markDead(target.name, credential, refusal.reason)
      : deps.credentials.markCooling(target.name, credential, refusal.until ?? new Date(), refusal.reason);
  lease.account.track(
    write.catch((error: Error) =>
      deps.logger.error("gateway: recording a credential's state failed", {
        event: "gateway.credential_write_failed",
        target: target.name,
        credential,
        error: error.message,
      }),
    ),
  );
}
