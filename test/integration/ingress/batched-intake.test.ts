import { createServer } from "node:net";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { BatchedRecorder } from "../../../ingress/webhooks/batched-recorder.ts";
import { DISPATCH_QUEUE } from "../../../shared/queues.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { countRows, type Harness, startHarness } from "./harness.ts";
import { snapshot } from "./support.ts";

const TOKEN = "burst-token-81d2";

/**
 * Group commit of webhook deliveries (ingress/webhooks/batched-recorder.ts): under a burst, the
 * deliveries that arrive together are stored in one transaction, and each is still answered for
 * itself.
 */
describe("webhook deliveries in a burst", () => {
  let database: TestDatabase;
  let harness: Harness;

  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    harness = await startHarness(
      database.url,
      snapshot({ deploy: { verify: "bearer", secret: { kind: "inline", value: TOKEN } } }),
    );
  });
  afterAll(async () => {
    await harness?.close();
    await database?.drop();
  });

  /** the stored triggers by id: their payload's `n`, when they were stored, and their dispatch jobs */
  async function stored(ids: string[]) {
    const { rows } = await harness.pool.query<{ id: string; n: number; at: string; jobs: number }>(
      `SELECT t.id, (t.payload->>'n')::int AS n, t.created_at::text AS at,
              (SELECT count(*)::int FROM pgboss.job j WHERE j.name = $2 AND j.data->>'triggerId' = t.id) AS jobs
         FROM svc.triggers t WHERE t.id = ANY($1)`,
      [ids, DISPATCH_QUEUE],
    );
    return new Map(rows.map((row) => [row.id, row]));
  }

  const deliver = (body: string, headers: Record<string, string> = {}) =>
    fetch(`${harness.url}/webhooks/deploy`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${TOKEN}`, ...headers },
      body,
    });

  it("stores a burst in fewer transactions than deliveries, each answer naming its own trigger", async () => {
    const responses = await Promise.all(Array.from({ length: 60 }, (_, n) => deliver(JSON.stringify({ n }))));
    const ids = await Promise.all(
      responses.map(async (r) => {
        expect(r.status).toBe(202);
        return ((await r.json()) as { trigger: string }).trigger;
      }),
    );
    const rows = await stored(ids);
    for (const [n, id] of ids.entries()) expect(rows.get(id)).toMatchObject({ n, jobs: 1 });
    // rows written by one transaction share its start time (now()): fewer distinct times than
    // deliveries means deliveries were stored together
    expect(new Set([...rows.values()].map((row) => row.at)).size).toBeLessThan(30);
  });

  it("fails only the delivery at fault when a batch holds a payload Postgres cannot store", async () => {
    const before = await countRows(harness.pool);
    const bodies = Array.from({ length: 60 }, (_, n) =>
      n === 30 ? JSON.stringify({ s: "nul\u0000byte" }) : JSON.stringify({ n }),
    );
    const responses = await Promise.all(bodies.map((body) => deliver(body)));
    const answers = await Promise.all(
      responses.map(async (r) => ({ status: r.status, body: await r.json() })),
    );
    expect(answers[30]).toMatchObject({ status: 400, body: { error: { code: "unstorable_payload" } } });
    const accepted = answers.filter((_, n) => n !== 30);
    for (const answer of accepted) expect(answer.status).toBe(202);
    const ids = accepted.map((answer) => (answer.body as { trigger: string }).trigger);
    const rows = await stored(ids);
    for (const [index, id] of ids.entries())
      expect(rows.get(id)).toMatchObject({ n: index < 30 ? index : index + 1, jobs: 1 });
    expect(await countRows(harness.pool)).toEqual({
      triggers: before.triggers + 59,
      jobs: before.jobs + 59,
    });
  });

  it("answers the deliveries of one delivery id within a burst with one trigger and one job", async () => {
    const before = await countRows(harness.pool);
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, n) =>
        deliver(JSON.stringify({ n }), n % 2 === 0 ? { "idempotency-key": "burst-7" } : {}),
      ),
    );
    const ids = await Promise.all(
      responses.map(async (r) => {
        expect(r.status).toBe(202);
        return ((await r.json()) as { trigger: string }).trigger;
      }),
    );
    const keyed = new Set(ids.filter((_, n) => n % 2 === 0));
    expect(keyed.size).toBe(1);
    expect(new Set(ids).size).toBe(11);
    expect(await countRows(harness.pool)).toEqual({
      triggers: before.triggers + 11,
      jobs: before.jobs + 11,
    });
  });

  it("does not store a batch whose connection failed again one by one: each delivery gets the error (it may have committed)", async () => {
    // a database server that accepts connections and drops them at once
    let connections = 0;
    const server = createServer((socket) => {
      connections += 1;
      socket.destroy();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as { port: number };
    const pool = new pg.Pool({ connectionString: `postgres://svc@127.0.0.1:${port}/svc` });
    pool.on("error", () => {}); // the dropped connections are the point of the test
    try {
      const recorder = new BatchedRecorder(pool, harness.boss);
      const outcomes = await Promise.allSettled(
        Array.from({ length: 12 }, (_, n) =>
          recorder.record({
            kind: "webhook",
            source: "deploy",
            eventName: "deploy",
            deliveryId: null,
            payloadJson: JSON.stringify({ n }),
          }),
        ),
      );
      for (const outcome of outcomes) expect(outcome.status).toBe("rejected");
      // one connection per transaction tried; storing each delivery again would take 12 more
      expect(connections).toBeLessThan(12);
    } finally {
      await pool.end();
      server.close();
    }
  });
});
