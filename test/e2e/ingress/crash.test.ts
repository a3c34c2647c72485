import { Agent, request } from "node:http";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { DISPATCH_QUEUE } from "../../../shared/queues.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import {
  childEnv,
  configDir,
  daemonYaml,
  freePort,
  type RunningIngress,
  startIngressProcess,
} from "./processes.ts";

const TOKEN = "crash-token-0c3e";
const REQUESTS = 1_000;
const CONCURRENCY = 32;
/** the kill lands after this many 202s, so it hits the burst in its middle, with requests in flight */
const KILL_AFTER = 300;

type Outcome = { key: string; status: number; trigger?: string } | { key: string; error: string };

function post(agent: Agent, url: string, key: string): Promise<Outcome> {
  return new Promise((resolve) => {
    const body = JSON.stringify({ key, padding: "x".repeat(512) });
    const req = request(`${url}/webhooks/burst`, {
      method: "POST",
      agent,
      headers: {
        "content-type": "application/json",
        "content-length": Buffer.byteLength(body),
        authorization: `Bearer ${TOKEN}`,
        "idempotency-key": key,
      },
    });
    req.on("response", (res) => {
      let text = "";
      res.on("data", (chunk) => (text += chunk));
      res.on("end", () => {
        const trigger =
          res.statusCode === 202 ? (JSON.parse(text) as { trigger: string }).trigger : undefined;
        resolve({ key, status: res.statusCode ?? 0, trigger });
      });
      res.on("error", (error) => resolve({ key, error: error.message }));
    });
    req.on("error", (error) => resolve({ key, error: error.message }));
    req.end(body);
  });
}

/** Sends every key with `CONCURRENCY` requests in flight; `onAccepted` sees each 202 as it arrives. */
async function burst(
  url: string,
  keys: string[],
  onAccepted: (count: number) => void = () => {},
): Promise<Outcome[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const outcomes: Outcome[] = [];
  let next = 0;
  let accepted = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < keys.length) {
        const outcome = await post(agent, url, keys[next++]!);
        outcomes.push(outcome);
        if ("status" in outcome && outcome.status === 202) onAccepted(++accepted);
      }
    }),
  );
  agent.destroy();
  return outcomes;
}

describe("SIGKILL during a burst of 1,000 webhooks", () => {
  let database: TestDatabase;
  let db: pg.Client;
  const running: RunningIngress[] = [];
  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    db = new pg.Client({ connectionString: database.url });
  });
  afterAll(async () => {
    for (const ingress of running) ingress.child.kill("SIGKILL");
    await db?.end().catch(() => {});
    await database?.drop();
  });

  it("leaves exactly one trigger and one job per 202, and no job or trigger without the other", async () => {
    const dir = await configDir({
      "daemon.yaml": daemonYaml(`    burst:\n      verify: bearer\n      secret: ${TOKEN}`),
    });
    const env = childEnv({
      SVC_CONFIG_DIR: dir,
      SVC_DATABASE_URL: database.url,
      SVC_PORT: String(await freePort()),
    });
    const first = await startIngressProcess(env);
    running.push(first);
    const keys = Array.from({ length: REQUESTS }, (_, index) => `burst-${index}`);
    const outcomes = await burst(first.url, keys, (count) => {
      if (count === KILL_AFTER) first.child.kill("SIGKILL");
    });
    const killed = await first.exited;
    expect(killed.signal).toBe("SIGKILL");

    const accepted = outcomes.filter(
      (o): o is Extract<Outcome, { status: number }> => "status" in o && o.status === 202,
    );
    const failed = outcomes.filter((o) => "error" in o);
    expect(outcomes.length).toBe(REQUESTS);
    expect(accepted.length).toBeGreaterThanOrEqual(KILL_AFTER);
    // the kill really cut the burst: requests were in flight or still to come
    expect(failed.length).toBeGreaterThan(0);
    expect(accepted.length + failed.length).toBe(REQUESTS);

    await db.connect();
    const counts = async () =>
      (
        await db.query(
          `SELECT
             (SELECT count(*)::int FROM svc.triggers) AS triggers,
             (SELECT count(*)::int FROM pgboss.job WHERE name = $1) AS jobs,
             (SELECT count(*)::int FROM pgboss.job j WHERE j.name = $1
                AND NOT EXISTS (SELECT 1 FROM svc.triggers t WHERE t.id = j.data->>'triggerId')) AS orphan_jobs,
             (SELECT count(*)::int FROM svc.triggers t
                WHERE NOT EXISTS (SELECT 1 FROM pgboss.job j WHERE j.name = $1 AND j.data->>'triggerId' = t.id)) AS orphan_triggers`,
          [DISPATCH_QUEUE],
        )
      ).rows[0];
    const { rows } = await db.query(
      `SELECT t.id, t.delivery_id, (SELECT count(*)::int FROM pgboss.job j WHERE j.name = $2 AND j.data->>'triggerId' = t.id) AS jobs
         FROM svc.triggers t WHERE t.id = ANY($1::text[])`,
      [accepted.map((o) => o.trigger), DISPATCH_QUEUE],
    );
    expect(rows.length).toBe(accepted.length);
    const byId = new Map(rows.map((row) => [row.id, row]));
    for (const outcome of accepted) {
      expect(byId.get(outcome.trigger)).toEqual({ id: outcome.trigger, delivery_id: outcome.key, jobs: 1 });
    }
    const afterCrash = await counts();
    expect(afterCrash.orphan_jobs).toBe(0);
    expect(afterCrash.orphan_triggers).toBe(0);
    expect(afterCrash.triggers).toBe(afterCrash.jobs);
    // some requests may have committed without their answer reaching the caller; never more than were sent
    expect(afterCrash.triggers).toBeGreaterThanOrEqual(accepted.length);
    expect(afterCrash.triggers).toBeLessThanOrEqual(REQUESTS);

    // a restarted ingress serves again; callers retrying what failed get each delivery stored exactly once
    const second = await startIngressProcess(env);
    running.push(second);
    // as real callers do, a request answered 503 (Retry-After) is sent again
    let pending = failed.map((o) => o.key);
    for (let attempt = 0; attempt < 5 && pending.length; attempt++) {
      const retried = await burst(second.url, pending);
      expect(retried.filter((o) => "status" in o && o.status !== 202 && o.status !== 503)).toEqual([]);
      pending = retried.filter((o) => !("status" in o && o.status === 202)).map((o) => o.key);
    }
    expect(pending).toEqual([]);
    const final = await counts();
    expect(final).toEqual({ triggers: REQUESTS, jobs: REQUESTS, orphan_jobs: 0, orphan_triggers: 0 });
    const perKey = await db.query("SELECT count(DISTINCT delivery_id)::int AS n FROM svc.triggers");
    expect(perKey.rows[0].n).toBe(REQUESTS);
    second.child.kill("SIGTERM");
    expect((await second.exited).code).toBe(0);
  }, 120_000);
});
