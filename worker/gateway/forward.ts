import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "../../shared/logger.ts";
import type { Lease } from "./account.ts";
import { credentialHeaders, DEFAULT_BASE_URLS, errorAnswer, upstreamUrl } from "./apis.ts";
import { requestHeaders, responseHeaders } from "./headers.ts";
import { type Tape, tapeOf } from "./recording.ts";
import { readModelRequest } from "./request.ts";
import { answerJson, openUpstream } from "./upstream.ts";
import { chargedUsage, costOf, NO_SPEND, StreamUsage, type Usage, usageOfBody } from "./usage.ts";
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

type Deps = { credentials: CredentialStates; logger: Logger };

/** Request headers already logged as left behind, by lease: one line per name and attempt. */
const dropLogged = new WeakMap<Lease, Set<string>>();

/**
 * Forwards one request to the lease's target, with the real credential, and its answer back as it
 * arrives: every chunk is written on as it comes (a stream is never held back to be read), while
 * the usage events of a stream, or the body of a JSON answer, are read beside it. A model call's
 * request is read whole first and checked (request.ts). When the answer ends, what it spent is
 * added to the attempt's account, and an answer that refuses the credential changes its state.
 */
export function forward(
  forwarding: Forwarding,
  request: IncomingMessage,
  response: ServerResponse,
  deps: Deps,
): void {
  if (!forwarding.model) {
    send(forwarding, request, response, deps, undefined);
    return;
  }
  const { lease, path } = forwarding;
  void readModelRequest(request, lease.api, path).then((read) => {
    if (!read) return;
    if ("refused" in read) {
      deps.logger.warn(`gateway: a model request to target ${lease.target.name} was refused before it left`, {
        event: "gateway.request_refused",
        target: lease.target.name,
        path,
        status: read.refused.status,
        answer: read.refused.body.slice(0, 500),
      });
      answerJson(response, request, read.refused);
      return;
    }
    send(forwarding, request, response, deps, read.body);
  });
}

/** The request upstream: `body` as read and checked, or (not a model call) the agent's as it comes. */
function send(
  forwarding: Forwarding,
  request: IncomingMessage,
  response: ServerResponse,
  deps: Deps,
  body: Buffer | undefined,
): void {
  const { lease, path, query, model } = forwarding;
  const { account, target, api } = lease;
  const url = new URL(upstreamUrl(api, target.baseUrl ?? DEFAULT_BASE_URLS[api], path, query));
  const { passed, dropped } = requestHeaders(api, request.headers);
  logDropped(lease, dropped, deps.logger);
  if (model) account.record({ ...NO_SPEND, requests: 1 });
  // numbered now, in the order the calls are made: a recording's order is the calls'
  const tape = body ? tapeOf(lease, path, body, deps.logger) : undefined;
  const encoding = request.headers["content-encoding"];
  const upstream = openUpstream(url, request, response, {
    ...passed,
    // a body read is sent on uncompressed (request.ts); one passed as it came keeps its encoding
    ...(body ? { "content-length": String(body.length) } : encoding ? { "content-encoding": encoding } : {}),
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
  upstream.on("response", (answer) => relay(forwarding, answer, response, deps, body?.length ?? 0, tape));
  if (body) upstream.end(body);
  else request.pipe(upstream);
}

function logDropped(lease: Lease, dropped: string[], logger: Logger): void {
  const logged = dropLogged.get(lease) ?? new Set<string>();
  const fresh = dropped.filter((name) => !logged.has(name));
  if (!fresh.length) return;
  dropLogged.set(lease, logged);
  for (const name of fresh) logged.add(name);
  logger.info(
    `gateway: request headers of the agent on target ${lease.target.name} not forwarded to its model API: ${fresh.join(", ")} (worker/gateway/headers.ts lists what passes)`,
    { event: "gateway.headers_dropped", target: lease.target.name, headers: fresh },
  );
}

function relay(
  { lease, model }: Forwarding,
  answer: IncomingMessage,
  response: ServerResponse,
  deps: Deps,
  sent: number,
  tape: Tape | undefined,
): void {
  const status = answer.statusCode ?? 502;
  // the credential is refused from the status alone: a request racing this answer's body is not forwarded on it
  if (status === 401 || status === 403) lease.refusal ??= { kind: "dead", reason: `HTTP ${status}` };
  const headers = responseHeaders(answer.headers);
  response.writeHead(status, answer.statusMessage, headers);
  tape?.head(status, headers);
  const ok = status >= 200 && status < 300;
  const stream = ok && model && /text\/event-stream/i.test(String(answer.headers["content-type"] ?? ""));
  const usage = stream ? new StreamUsage() : undefined;
  const kept: Buffer[] = [];
  let keptBytes = 0;
  let received = 0;
  const limit = ok ? (model && !stream ? JSON_KEPT : 0) : ERROR_KEPT;
  answer.on("data", (chunk: Buffer) => {
    if (!response.write(chunk)) {
      answer.pause();
      response.once("drain", () => answer.resume());
    }
    received += chunk.length;
    tape?.push(chunk);
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
    if (model && ok) {
      const read = usage ? usage.end() : keptBytes === received ? usageOfBody(text) : undefined;
      const whole = complete && read !== undefined && (usage ? usage.final : true);
      if (!whole) estimated(lease, { complete, stream, sent, received }, deps.logger);
      settle(lease, chargedUsage(read, whole, sent, received), deps.logger);
    }
    if (!ok) judge(lease, status, answer, text, deps);
    tape?.end(complete);
    // a cut answer is cut for the agent too: it must not take the part it got for the whole
    if (complete) response.end();
    else response.destroy();
  };
  answer.on("end", () => ended(true));
  answer.on("close", () => ended(false));
  answer.on("error", () => response.destroy());
}

/** Why a model call is charged by its bytes (usage.ts, chargedUsage), for the worker's log. */
function estimated(
  lease: Lease,
  seen: { complete: boolean; stream: boolean; sent: number; received: number },
  logger: Logger,
): void {
  const why = !seen.complete
    ? "the answer was cut before its end"
    : seen.stream
      ? "the stream ended without its usage"
      : seen.received > JSON_KEPT
        ? `the answer was larger than the ${JSON_KEPT} bytes read for its usage`
        : "the answer carried no usage";
  logger.warn(`gateway: a model call on target ${lease.target.name} was charged an estimate: ${why}`, {
    event: "gateway.usage_estimated",
    target: lease.target.name,
    invocation: lease.account.ledger.invocationId,
    sent_bytes: seen.sent,
    received_bytes: seen.received,
  });
}

/** The answer's usage into the account; a budgeted invocation's total is read again beside it. */
function settle(lease: Lease, usage: Usage, logger: Logger): void {
  const { account } = lease;
  account.record({ ...usage, requests: 0, cost: costOf(usage, lease.target.price) });
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
