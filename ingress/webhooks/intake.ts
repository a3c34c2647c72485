import { randomBytes } from "node:crypto";
import { type Request, type Response, Router } from "express";
import type pg from "pg";
import type { PgBoss } from "pg-boss";
import type { NewTrigger, TriggerKind } from "../../db/triggers.ts";
import type { Logger } from "../../shared/logger.ts";
import {
  isDatabaseUnavailable,
  isUnstorableValue,
  sendError,
  sendUnauthorized,
  sendUnavailable,
} from "../errors.ts";
import { isJsonContentType } from "../media-type.ts";
import { BatchedRecorder } from "./batched-recorder.ts";
import { UNKNOWN_SOURCE_DIGEST, verifyBearer } from "./bearer.ts";
import { readRawBody } from "./body.ts";
import { codehostEventName } from "./codehost/event.ts";
import * as codehost from "./codehost/verify.ts";
import { gitlabEventName } from "./gitlab/event.ts";
import * as gitlab from "./gitlab/verify.ts";
import { verifyHexHmac } from "./hmac.ts";
import type { ReadySource, SourceTable } from "./sources.ts";
import { trackerEventName } from "./tracker/event.ts";
import * as tracker from "./tracker/verify.ts";

export interface IntakeDependencies {
  sources: SourceTable;
  pool: pg.Pool;
  boss: PgBoss;
  maxBodyBytes: number;
  logger: Logger;
  /** milliseconds since the epoch; tests move it to check the tracker's and GitLab's timestamp windows */
  now?: () => number;
}

// GitLab's deliveries are code-host events: the pipelines, gates, commands and concurrency groups
// of `codehost` triggers serve them, and the payload's own shape tells the worker which host it was
const KIND: Record<ReadySource["verify"], TriggerKind> = {
  bearer: "webhook",
  codehost: "codehost",
  tracker: "tracker",
  gitlab: "codehost",
};

const MAX_DELIVERY_ID = 200;
const EVENT_HEADER_VALUE = /^[A-Za-z0-9_.-]{1,100}$/;

/** `POST /webhooks/{name}` and its `POST /events` alias: verify, then store trigger and job in one transaction. */
export function createWebhookRouter(deps: IntakeDependencies): Router {
  const router = Router();
  const now = deps.now ?? Date.now;
  const recorder = new BatchedRecorder(deps.pool, deps.boss);

  const intake = async (req: Request, res: Response, routeName: string, source: ReadySource | undefined) => {
    res.locals.route = routeName;
    const raw = await readRawBody(req, deps.maxBodyBytes);
    if (!raw.ok) {
      if (raw.reason === "aborted") return;
      sendError(
        res,
        413,
        "payload_too_large",
        `the body is larger than ${deps.maxBodyBytes} bytes (webhooks.max_body_bytes)`,
        { Connection: "close" },
      );
      return;
    }
    const body = raw.body;
    if (!verify(req, body, source, now())) return sendUnauthorized(res);
    // from here on the caller is authentic, so answers may say precisely what is wrong
    const verified = source!;
    if (!isJsonContentType(req.headers["content-type"])) {
      return sendError(
        res,
        415,
        "unsupported_media_type",
        "send the body as JSON with Content-Type: application/json",
      );
    }
    const encoding = req.headers["content-encoding"];
    if (encoding !== undefined && encoding.toLowerCase() !== "identity") {
      return sendError(res, 415, "unsupported_media_type", "send the body without a Content-Encoding");
    }
    const payloadJson = body.toString("utf8");
    let payload: unknown;
    try {
      payload = JSON.parse(payloadJson);
    } catch {
      return sendError(res, 400, "invalid_json", "the body is not valid JSON");
    }
    if (verified.verify === "tracker" && !tracker.isFreshTimestamp(payload, now())) {
      return sendUnauthorized(res);
    }
    const described = describe(req, verified, payload);
    if ("problem" in described) return sendError(res, 400, "bad_request", described.problem);
    try {
      const { id } = await recorder.record({ ...described.trigger, payloadJson });
      res.locals.trigger = id;
      sendAccepted(res, id);
    } catch (error) {
      if (isUnstorableValue(error)) {
        return sendError(
          res,
          400,
          "unstorable_payload",
          "the JSON holds a value Postgres cannot store (a \\u0000 character, a lone surrogate, or nesting too deep)",
        );
      }
      if (isDatabaseUnavailable(error)) {
        deps.logger.warn("the database is unreachable; the webhook was not stored", {
          event: "webhook.unavailable",
          route: routeName,
          error: (error as Error).message,
        });
        return sendUnavailable(res);
      }
      throw error;
    }
  };

  router.post("/events", (req, res) => intake(req, res, "events", deps.sources.codehost));
  router.post("/webhooks/:name", (req, res) =>
    intake(req, res, `webhooks/${req.params.name}`, deps.sources.byName(req.params.name)),
  );
  // deeper paths name no source; they are refused exactly like an unknown name
  router.post("/webhooks/*rest", (req, res) => intake(req, res, "webhooks/*", undefined));
  return router;
}

// keys the HMAC that routes without an HMAC source compute anyway; never a real source's secret
const DECOY_HMAC_KEY = randomBytes(32).toString("hex");

/**
 * One path for every cause of rejection, so the answer and its timing do not depend on which it
 * was. Every request pays for one HMAC of its body and one bearer comparison, whatever its route,
 * so timing a large body does not tell a code-host route from a bearer route or from no route.
 * (GitLab's token comparison is the bearer comparison's twin: a SHA-256 digest of the header.)
 */
function verify(req: Request, body: Buffer, source: ReadySource | undefined, now: number): boolean {
  switch (source?.verify) {
    case "gitlab": {
      const token = gitlab.verifyGitlabToken(header(req, gitlab.TOKEN_HEADER), source.digest);
      if (!source.signingKey) {
        verifyHexHmac(undefined, body, DECOY_HMAC_KEY);
        return token;
      }
      const signed = gitlab.verifyStandardSignature(
        {
          id: header(req, gitlab.SIGNATURE_ID_HEADER),
          timestamp: header(req, gitlab.SIGNATURE_TIMESTAMP_HEADER),
          signature: header(req, gitlab.SIGNATURE_HEADER),
        },
        body,
        source.signingKey,
        now,
      );
      return token && signed;
    }
    case "codehost":
      verifyBearer(req.headers.authorization, UNKNOWN_SOURCE_DIGEST);
      return codehost.verifyCodehostSignature(header(req, codehost.SIGNATURE_HEADER), body, source.secret);
    case "tracker":
      verifyBearer(req.headers.authorization, UNKNOWN_SOURCE_DIGEST);
      return tracker.verifyTrackerSignature(header(req, tracker.SIGNATURE_HEADER), body, source.secret);
    case "bearer":
      verifyHexHmac(undefined, body, DECOY_HMAC_KEY);
      return verifyBearer(req.headers.authorization, source.digest);
    default:
      verifyHexHmac(undefined, body, DECOY_HMAC_KEY);
      verifyBearer(req.headers.authorization, UNKNOWN_SOURCE_DIGEST);
      return false;
  }
}

/**
 * `202 {"trigger": id}` with the headers res.json would set, written directly: this answer goes out
 * for every stored delivery, and res.json's settings and header lookups cost more than the write.
 */
function sendAccepted(res: Response, id: string): void {
  const body = JSON.stringify({ trigger: id });
  res.writeHead(202, {
    "Content-Type": "application/json; charset=utf-8",
    "Content-Length": String(Buffer.byteLength(body)),
  });
  res.end(body);
}

function describe(
  req: Request,
  source: ReadySource,
  payload: unknown,
): { trigger: Omit<NewTrigger, "payloadJson"> } | { problem: string } {
  const base = { kind: KIND[source.verify], source: source.name };
  let eventName: string;
  let deliveryId: string | undefined;
  let deliveryHeader: string;
  if (source.verify === "codehost") {
    const event = header(req, codehost.EVENT_HEADER);
    if (!event || !EVENT_HEADER_VALUE.test(event)) {
      return { problem: "a code-host delivery needs an X-GitHub-Event header naming the event" };
    }
    eventName = codehostEventName(event, payload);
    deliveryHeader = "X-GitHub-Delivery";
    deliveryId = header(req, codehost.DELIVERY_HEADER);
  } else if (source.verify === "gitlab") {
    const name = gitlabEventName(payload);
    if (!name || !EVENT_HEADER_VALUE.test(name)) {
      return {
        problem:
          'a GitLab delivery needs an "object_kind" field in its payload (letters, digits, "_", "." and "-"), as GitLab\'s webhook events carry',
      };
    }
    eventName = name;
    [deliveryHeader, deliveryId] = gitlabDeliveryId(req, source);
  } else if (source.verify === "tracker") {
    const name = trackerEventName(payload);
    if (!name) return { problem: 'a tracker delivery needs a "type" field in its payload' };
    eventName = name;
    deliveryHeader = "Linear-Delivery";
    deliveryId = header(req, tracker.DELIVERY_HEADER);
  } else {
    eventName = source.name;
    deliveryHeader = "Idempotency-Key";
    deliveryId = header(req, "idempotency-key");
  }
  if (deliveryId !== undefined && (deliveryId === "" || deliveryId.length > MAX_DELIVERY_ID)) {
    return { problem: `the ${deliveryHeader} header must be 1 to ${MAX_DELIVERY_ID} characters` };
  }
  return { trigger: { ...base, eventName, deliveryId: deliveryId ?? null } };
}

/**
 * The id that makes a GitLab redelivery find the first trigger. A signed delivery's `webhook-id`
 * (GitLab's Idempotency-Key) is covered by the signature, so a replay inside the timestamp window
 * cannot dodge the deduplication by changing it. Unsigned, `Idempotency-Key` is the id GitLab keeps
 * across retries; a GitLab too old to send it has only `X-Gitlab-Event-UUID`.
 */
function gitlabDeliveryId(req: Request, source: ReadySource): [header: string, id: string | undefined] {
  if (source.signingKey) return ["webhook-id", header(req, gitlab.SIGNATURE_ID_HEADER)];
  const key = header(req, gitlab.IDEMPOTENCY_HEADER);
  if (key !== undefined) return ["Idempotency-Key", key];
  return ["X-Gitlab-Event-UUID", header(req, gitlab.EVENT_UUID_HEADER)];
}

function header(req: Request, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
