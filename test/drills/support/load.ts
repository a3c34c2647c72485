import { createHmac } from "node:crypto";
import { Agent, request } from "node:http";

/** One webhook request as the drill sends it: exact bytes and headers. */
export interface WebhookRequest {
  /** a label for accounting (`bearer`, `codehost`, `bad-signature`, …) */
  kind: string;
  path: string;
  headers: Record<string, string>;
  body: Buffer;
  /** the delivery id it carries, when any */
  deliveryId?: string;
}

export type Outcome =
  | { request: WebhookRequest; status: number; body: string; trigger?: string; ms: number; upstream?: string }
  | { request: WebhookRequest; error: string; ms: number };

export function isStatus(outcome: Outcome, status: number): outcome is Extract<Outcome, { status: number }> {
  return "status" in outcome && outcome.status === status;
}

/** POSTs one request; never rejects: a transport failure is an `error` outcome. Bounded by `timeoutMs`. */
export function send(
  agent: Agent,
  baseUrl: string,
  webhook: WebhookRequest,
  timeoutMs = 30_000,
): Promise<Outcome> {
  const started = performance.now();
  return new Promise((resolve) => {
    let settled = false;
    const finish = (outcome: Outcome) => {
      if (settled) return;
      settled = true;
      resolve(outcome);
    };
    const req = request(`${baseUrl}${webhook.path}`, {
      method: "POST",
      agent,
      headers: { ...webhook.headers, "content-length": String(webhook.body.length) },
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on("response", (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        let trigger: string | undefined;
        if (res.statusCode === 202) {
          try {
            trigger = (JSON.parse(text) as { trigger?: string }).trigger;
          } catch {
            trigger = undefined;
          }
        }
        const upstream = res.headers["x-drill-upstream"];
        finish({
          request: webhook,
          status: res.statusCode ?? 0,
          body: text,
          trigger,
          ms: performance.now() - started,
          upstream: typeof upstream === "string" ? upstream : undefined,
        });
      });
      res.on("error", (error) =>
        finish({ request: webhook, error: error.message, ms: performance.now() - started }),
      );
    });
    req.on("error", (error) =>
      finish({ request: webhook, error: error.message, ms: performance.now() - started }),
    );
    req.end(webhook.body);
  });
}

export interface BurstOptions {
  concurrency: number;
  /** no request starts after this instant (ms since the epoch); the burst then ends by itself */
  deadline: number;
  /** sees every outcome as it arrives, in arrival order */
  onOutcome?: (outcome: Outcome, index: number) => void;
  timeoutMs?: number;
}

/** A request, or a function making it at the moment it is sent (tracker timestamps must be fresh). */
export type Planned = WebhookRequest | (() => WebhookRequest);

/** Sends every request with `concurrency` in flight; returns the outcomes in arrival order. */
export async function burst(baseUrl: string, requests: Planned[], options: BurstOptions): Promise<Outcome[]> {
  // idle sockets close after 2 s, before the server's 5 s keep-alive timeout, so none is reused as it closes
  const agent = new Agent({ keepAlive: true, maxSockets: options.concurrency, timeout: 2_000 });
  const outcomes: Outcome[] = [];
  let next = 0;
  try {
    await Promise.all(
      Array.from({ length: options.concurrency }, async () => {
        while (next < requests.length && Date.now() < options.deadline) {
          const planned = requests[next++]!;
          const webhook = typeof planned === "function" ? planned() : planned;
          const outcome = await send(agent, baseUrl, webhook, options.timeoutMs);
          outcomes.push(outcome);
          options.onOutcome?.(outcome, outcomes.length);
        }
      }),
    );
  } finally {
    agent.destroy();
  }
  return outcomes;
}

/** Sends at a steady `perSecond` until `durationMs` passed; requests come from `make(i)`. */
export async function steady(
  baseUrl: string,
  perSecond: number,
  durationMs: number,
  make: (index: number) => WebhookRequest,
  onOutcome: (outcome: Outcome) => void,
): Promise<number> {
  const agent = new Agent({ keepAlive: true, maxSockets: 16, timeout: 2_000 });
  const started = Date.now();
  const pending = new Set<Promise<void>>();
  let sent = 0;
  try {
    while (Date.now() - started < durationMs) {
      const due = Math.floor(((Date.now() - started) / 1000) * perSecond);
      while (sent < due && pending.size < 64) {
        const work = send(agent, baseUrl, make(sent++)).then(onOutcome);
        pending.add(work);
        void work.finally(() => pending.delete(work));
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await Promise.all(pending);
  } finally {
    agent.destroy();
  }
  return sent;
}

const JSON_TYPE = { "content-type": "application/json" };

export function bearerRequest(
  route: string,
  token: string,
  payload: unknown,
  deliveryId?: string,
): WebhookRequest {
  return {
    kind: "bearer",
    path: `/webhooks/${route}`,
    headers: {
      ...JSON_TYPE,
      authorization: `Bearer ${token}`,
      ...(deliveryId ? { "idempotency-key": deliveryId } : {}),
    },
    body: Buffer.from(JSON.stringify(payload)),
    deliveryId,
  };
}

export function hmacHex(secret: string, body: Buffer): string {
  return createHmac("sha256", secret).update(body).digest("hex");
}

export function codehostRequest(
  route: string,
  secret: string,
  event: string,
  payload: unknown,
  deliveryId: string,
): WebhookRequest {
  const body = Buffer.from(JSON.stringify(payload));
  return {
    kind: "codehost",
    path: `/webhooks/${route}`,
    headers: {
      ...JSON_TYPE,
      "x-github-event": event,
      "x-github-delivery": deliveryId,
      "x-hub-signature-256": `sha256=${hmacHex(secret, body)}`,
    },
    body,
    deliveryId,
  };
}

/** `payload` gets a fresh `webhookTimestamp` unless it has one. */
export function trackerRequest(
  route: string,
  secret: string,
  payload: Record<string, unknown>,
  deliveryId: string,
): WebhookRequest {
  const body = Buffer.from(JSON.stringify({ webhookTimestamp: Date.now(), ...payload }));
  return {
    kind: "tracker",
    path: `/webhooks/${route}`,
    headers: { ...JSON_TYPE, "linear-signature": hmacHex(secret, body), "linear-delivery": deliveryId },
    body,
    deliveryId,
  };
}

/** Counts of outcomes by `<kind> <status|error>`, for the printed accounting. */
export function tally(outcomes: Outcome[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const outcome of outcomes) {
    const key = `${outcome.request.kind}:${"status" in outcome ? outcome.status : "error"}`;
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return Object.fromEntries(Object.entries(counts).sort(([a], [b]) => a.localeCompare(b)));
}

export function statusCounts(outcomes: Outcome[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const outcome of outcomes) {
    const key = "status" in outcome ? String(outcome.status) : "error";
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}
