import { createHmac } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { sign } from "@octokit/webhooks-methods";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { getTrigger } from "../../../db/triggers.ts";
import { DISPATCH_QUEUE } from "../../../shared/queues.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { countRows, type Harness, startHarness, wholeResponse } from "./harness.ts";
import { snapshot } from "./support.ts";

const TOKEN = "hook-token-4f1c9a";
const GITHUB_SECRET = "It's a Secret to Everybody";
const LINEAR_SECRET = "linear-signing-secret-77";
const FIXTURES = join(import.meta.dirname, "../../../ingress/webhooks/codehost/fixtures");

describe("POST /webhooks/{name} and /events", () => {
  let database: TestDatabase;
  let harness: Harness;
  let clock = Date.now();

  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    harness = await startHarness(
      database.url,
      snapshot(
        {
          deploy: { verify: "bearer", secret: { kind: "inline", value: TOKEN } },
          github: { verify: "codehost", secret: { kind: "inline", value: GITHUB_SECRET } },
          linear: { verify: "tracker", secret: { kind: "inline", value: LINEAR_SECRET } },
        },
        64 * 1024,
      ),
      { now: () => clock },
    );
  });
  afterAll(async () => {
    await harness?.close();
    await database?.drop();
  });

  const post = (path: string, body: string, headers: Record<string, string> = {}) =>
    fetch(`${harness.url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body,
    });
  const bearer = (path: string, body: string, headers: Record<string, string> = {}) =>
    post(path, body, { authorization: `Bearer ${TOKEN}`, ...headers });

  async function jobsFor(triggerId: string): Promise<number> {
    const { rows } = await harness.pool.query(
      "SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1 AND data->>'triggerId' = $2",
      [DISPATCH_QUEUE, triggerId],
    );
    return rows[0].n;
  }

  it("accepts a bearer webhook: 202 with the trigger id, one trigger row and one dispatch job", async () => {
    const body = JSON.stringify({ ref: "main", nested: { n: 1, list: [true, null, "x"] } });
    const response = await bearer("/webhooks/deploy", body);
    expect(response.status).toBe(202);
    const { trigger } = (await response.json()) as { trigger: string };
    expect(trigger).toMatch(/^trg_[a-z2-7]{16,}$/);
    const stored = await getTrigger(harness.pool, trigger);
    expect(stored).toMatchObject({
      kind: "webhook",
      source: "deploy",
      eventName: "deploy",
      status: "queued",
      diagnostic: null,
      deliveryId: null,
    });
    expect(stored?.payload).toEqual(JSON.parse(body));
    expect(await jobsFor(trigger)).toBe(1);
  });

  it("answers a redelivery (same Idempotency-Key) with the first trigger and adds nothing, even concurrently", async () => {
    const before = await countRows(harness.pool);
    const body = JSON.stringify({ attempt: 1 });
    const answers = await Promise.all(
      Array.from({ length: 12 }, () => bearer("/webhooks/deploy", body, { "idempotency-key": "deploy-42" })),
    );
    expect(answers.map((r) => r.status)).toEqual(Array(12).fill(202));
    const ids = new Set(
      await Promise.all(answers.map(async (r) => ((await r.json()) as { trigger: string }).trigger)),
    );
    expect(ids.size).toBe(1);
    const [id] = [...ids];
    expect(await countRows(harness.pool)).toEqual({ triggers: before.triggers + 1, jobs: before.jobs + 1 });
    expect(await jobsFor(id!)).toBe(1);
    const again = await bearer("/webhooks/deploy", body, { "idempotency-key": "deploy-42" });
    expect(await again.json()).toEqual({ trigger: id });
    expect(await countRows(harness.pool)).toEqual({ triggers: before.triggers + 1, jobs: before.jobs + 1 });
  });

  it("answers every rejection with the same bytes and records nothing", async () => {
    const before = await countRows(harness.pool);
    const body = JSON.stringify({ hello: "world" });
    const causes: Record<string, () => Promise<Response>> = {
      "wrong token": () => post("/webhooks/deploy", body, { authorization: `Bearer ${TOKEN}x` }),
      "missing header": () => post("/webhooks/deploy", body),
      "malformed header": () => post("/webhooks/deploy", body, { authorization: "Bearer" }),
      "empty token": () => post("/webhooks/deploy", body, { authorization: "Bearer  " }),
      "wrong scheme": () => post("/webhooks/deploy", body, { authorization: `Basic ${TOKEN}` }),
      "token without scheme": () => post("/webhooks/deploy", body, { authorization: TOKEN }),
      "route with no source": () => post("/webhooks/nobody", body, { authorization: `Bearer ${TOKEN}` }),
      "prototype name": () => post("/webhooks/constructor", body, { authorization: `Bearer ${TOKEN}` }),
      "proto name": () => post("/webhooks/__proto__", body, { authorization: `Bearer ${TOKEN}` }),
      "deeper path": () => post("/webhooks/deploy/extra", body, { authorization: `Bearer ${TOKEN}` }),
      "codehost bad signature": () =>
        post("/events", body, {
          "x-hub-signature-256": `sha256=${"0".repeat(64)}`,
          "x-github-event": "push",
        }),
      "codehost no signature": () => post("/webhooks/github", body, { "x-github-event": "push" }),
      "codehost bearer token": () =>
        post("/webhooks/github", body, {
          authorization: `Bearer ${GITHUB_SECRET}`,
          "x-github-event": "push",
        }),
      "tracker bad signature": () => post("/webhooks/linear", body, { "linear-signature": "ab".repeat(32) }),
    };
    const responses: Record<string, Awaited<ReturnType<typeof wholeResponse>>> = {};
    for (const [cause, send] of Object.entries(causes)) responses[cause] = await wholeResponse(await send());
    const reference = responses["wrong token"]!;
    expect(reference.status).toBe(401);
    expect(JSON.parse(reference.body)).toEqual({
      error: { code: "unauthorized", message: "the request is not authorized" },
    });
    for (const [cause, response] of Object.entries(responses)) {
      expect({ cause, ...response }).toEqual({ cause, ...reference });
    }
    expect(reference.headers.map(([name]) => name)).not.toContain("etag");
    expect(reference.headers.map(([name]) => name)).not.toContain("x-powered-by");
    expect(await countRows(harness.pool)).toEqual(before);
  });

  it("passes GitHub's documented test vector", async () => {
    // the vector signs the body "Hello, World!"; it is not JSON, so the check after verification answers 400, not 401
    const response = await post("/webhooks/github", "Hello, World!", {
      "x-hub-signature-256": "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
      "x-github-event": "push",
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe("invalid_json");
  });

  const fixtures = [
    { event: "push", file: "push/payload.json", eventName: "push" },
    { event: "pull_request", file: "pull_request/opened.payload.json", eventName: "pull_request.opened" },
    {
      event: "issue_comment",
      file: "issue_comment/created.payload.json",
      eventName: "issue_comment.created",
    },
    { event: "ping", file: "ping/payload.json", eventName: "ping" },
  ];
  for (const [index, fixture] of fixtures.entries()) {
    it(`stores a real ${fixture.event} delivery signed by @octokit/webhooks-methods as sent`, async () => {
      const body = await readFile(join(FIXTURES, fixture.file), "utf8");
      const path = index % 2 === 0 ? "/events" : "/webhooks/github";
      const delivery = `72d3162e-cc78-11e3-81ab-4c9367dc095${index}`;
      const headers = {
        "x-hub-signature-256": await sign(GITHUB_SECRET, body),
        "x-github-event": fixture.event,
        "x-github-delivery": delivery,
        "user-agent": "GitHub-Hookshot/044aadd",
      };
      const response = await post(path, body, headers);
      expect(response.status).toBe(202);
      const { trigger } = (await response.json()) as { trigger: string };
      const stored = await getTrigger(harness.pool, trigger);
      expect(stored).toMatchObject({
        kind: "codehost",
        source: "github",
        eventName: fixture.eventName,
        deliveryId: delivery,
      });
      expect(stored?.payload).toEqual(JSON.parse(body));
      expect(await jobsFor(trigger)).toBe(1);
      // GitHub's "redeliver" button resends the same delivery id, through either route
      const other = path === "/events" ? "/webhooks/github" : "/events";
      const redelivered = await post(other, body, headers);
      expect(redelivered.status).toBe(202);
      expect(await redelivered.json()).toEqual({ trigger });
      expect(await jobsFor(trigger)).toBe(1);
    });
  }

  it("answers 400 for an authentic code-host delivery without X-GitHub-Event", async () => {
    const before = await countRows(harness.pool);
    const body = JSON.stringify({ zen: "Keep it logically awesome." });
    const response = await post("/events", body, { "x-hub-signature-256": await sign(GITHUB_SECRET, body) });
    expect(response.status).toBe(400);
    expect(await countRows(harness.pool)).toEqual(before);
  });

  const linearSign = (body: string) => createHmac("sha256", LINEAR_SECRET).update(body).digest("hex");

  it("accepts a signed, fresh tracker delivery and dedupes on Linear-Delivery", async () => {
    const body = JSON.stringify({
      action: "create",
      type: "Issue",
      data: { id: "9f1e", title: "Crash on start" },
      webhookTimestamp: clock - 5_000,
    });
    const headers = { "linear-signature": linearSign(body), "linear-delivery": "0b7a-11" };
    const response = await post("/webhooks/linear", body, headers);
    expect(response.status).toBe(202);
    const { trigger } = (await response.json()) as { trigger: string };
    const stored = await getTrigger(harness.pool, trigger);
    expect(stored).toMatchObject({
      kind: "tracker",
      source: "linear",
      eventName: "Issue.create",
      deliveryId: "0b7a-11",
    });
    expect(stored?.payload).toEqual(JSON.parse(body));
    const again = await post("/webhooks/linear", body, headers);
    expect(await again.json()).toEqual({ trigger });
    expect(await jobsFor(trigger)).toBe(1);
  });

  it("rejects a tracker delivery whose webhookTimestamp is more than 60 s away, either way, or missing", async () => {
    const before = await countRows(harness.pool);
    const reference = await wholeResponse(await post("/webhooks/nobody", "{}"));
    for (const timestamp of [clock - 60_001, clock + 60_001, undefined, "yesterday"]) {
      const body = JSON.stringify({ action: "update", type: "Issue", webhookTimestamp: timestamp });
      const response = await post("/webhooks/linear", body, { "linear-signature": linearSign(body) });
      expect(await wholeResponse(response)).toEqual(reference);
    }
    const edge = JSON.stringify({ action: "update", type: "Issue", webhookTimestamp: clock - 60_000 });
    expect((await post("/webhooks/linear", edge, { "linear-signature": linearSign(edge) })).status).toBe(202);
    expect(await countRows(harness.pool)).toEqual({ triggers: before.triggers + 1, jobs: before.jobs + 1 });
    clock = Date.now();
  });

  it("refuses bad requests precisely and stores nothing", async () => {
    const before = await countRows(harness.pool);
    const cases: { send: () => Promise<Response>; status: number; code: string }[] = [
      {
        send: () =>
          bearer("/webhooks/deploy", "ref=main", { "content-type": "application/x-www-form-urlencoded" }),
        status: 415,
        code: "unsupported_media_type",
      },
      {
        send: () => bearer("/webhooks/deploy", "{}", { "content-type": "text/plain" }),
        status: 415,
        code: "unsupported_media_type",
      },
      {
        send: () => bearer("/webhooks/deploy", "{}", { "content-type": "application/json; charset=latin1" }),
        status: 415,
        code: "unsupported_media_type",
      },
      { send: () => bearer("/webhooks/deploy", "{", {}), status: 400, code: "invalid_json" },
      { send: () => bearer("/webhooks/deploy", "", {}), status: 400, code: "invalid_json" },
      { send: () => bearer("/webhooks/deploy", '{"a":1}garbage', {}), status: 400, code: "invalid_json" },
      {
        send: () => bearer("/webhooks/deploy", JSON.stringify({ s: "nul\u0000byte" }), {}),
        status: 400,
        code: "unstorable_payload",
      },
      {
        send: () => bearer("/webhooks/deploy", '{"s":"\\ud800"}', {}),
        status: 400,
        code: "unstorable_payload",
      },
      {
        send: () => bearer("/webhooks/deploy", "{}", { "idempotency-key": "k".repeat(201) }),
        status: 400,
        code: "bad_request",
      },
      {
        send: () => bearer("/webhooks/deploy", JSON.stringify({ big: "x".repeat(64 * 1024) }), {}),
        status: 413,
        code: "payload_too_large",
      },
    ];
    for (const { send, status, code } of cases) {
      const response = await send();
      const body = (await response.json()) as { error: { code: string; message: string } };
      expect({ status: response.status, code: body.error.code }).toEqual({ status, code });
      expect(body.error.message.length).toBeGreaterThan(10);
    }
    expect(await countRows(harness.pool)).toEqual(before);
  });

  it("answers 413 for a chunked body that passes the limit while streaming", async () => {
    const before = await countRows(harness.pool);
    const chunk = new TextEncoder().encode(" ".repeat(16 * 1024));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ < 8) controller.enqueue(chunk);
        else controller.close();
      },
    });
    const response = await fetch(`${harness.url}/webhooks/deploy`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${TOKEN}` },
      body: stream,
      duplex: "half",
    } as RequestInit);
    expect(response.status).toBe(413);
    expect(await countRows(harness.pool)).toEqual(before);
  });

  it("serves / and /health without a token", async () => {
    const root = await fetch(`${harness.url}/`);
    expect(root.status).toBe(200);
    expect(await root.json()).toMatchObject({ service: "svc" });
    const health = await fetch(`${harness.url}/health`);
    expect(health.status).toBe(200);
  });

  it("logs one line per request with route, status, latency and trigger id, and never a secret or payload", async () => {
    const marker = "payload-marker-never-logged";
    const response = await bearer("/webhooks/deploy", JSON.stringify({ marker }));
    const { trigger } = (await response.json()) as { trigger: string };
    const line = harness.logs.find((entry) => entry.trigger === trigger);
    expect(line).toMatchObject({
      event: "http.request",
      route: "webhooks/deploy",
      status: 202,
      method: "POST",
    });
    expect(typeof line?.latency_ms).toBe("number");
    const text = harness.logText();
    for (const secret of [TOKEN, GITHUB_SECRET, LINEAR_SECRET, marker]) expect(text).not.toContain(secret);
  });
});
