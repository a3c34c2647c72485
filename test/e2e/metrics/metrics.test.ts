import { rm } from "node:fs/promises";
import { createServer } from "node:net";
import parsePrometheusTextFormat from "parse-prometheus-text-format";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { waitFor, waitForTrigger } from "../../integration/worker/helpers.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { baseFiles, EXECUTABLES } from "../worker/config-fixture.ts";
import {
  postWebhook,
  type RoleProcess,
  startIngress,
  startWorkerProcess,
  writeConfigDir,
} from "../worker/processes.ts";

const HOOK = "metrics-hook-token";
const ADMIN = "metrics-admin-token-0123";
const READER = "metrics-reader-token-0123";
const SCRAPER = "metrics-scraper-token-0123";
const MARKER = "payload-marker-7f3a";
const COMPLETED = 5;
const FAILED = 2;
const REFUSED = 3;

/** Label names a series may carry: bounded vocabularies only, never ids, tokens or payload values. */
const ALLOWED_LABELS = new Set([
  "method",
  "route",
  "status",
  "queue",
  "outcome",
  "code",
  "target",
  "lane",
  "state",
  "le",
]);

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * The samples of the exposition, one per line. parse-prometheus-text-format checks the document's
 * structure but drops the `_count` of labelled histograms, so sample values are read line by line.
 */
function samples(text: string): { name: string; labels: Record<string, string>; value: number }[] {
  return text
    .split("\n")
    .filter((line) => line && !line.startsWith("#"))
    .map((line) => {
      const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
      if (!match) throw new Error(`not an exposition line: ${line}`);
      const labels = Object.fromEntries(
        [...(match[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map((m) => [
          m[1]!,
          m[2]!,
        ]),
      );
      return { name: match[1]!, labels, value: Number(match[3]) };
    });
}

function value(text: string, name: string, labels: Record<string, string>): number {
  return samples(text)
    .filter((s) => s.name === name && Object.entries(labels).every(([key, v]) => s.labels[key] === v))
    .reduce((sum, s) => sum + s.value, 0);
}

/**
 * `/metrics` of a real ingress and a real worker after a burst of webhooks: the counters equal the
 * requests and runs the test made, the exposition parses, and no label carries an id or a token.
 */
describe("Prometheus metrics (real processes, real Postgres)", () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  let dir: string;
  let ingress: RoleProcess;
  let worker: RoleProcess;
  let url: string;
  let workerUrl: string;
  const triggers: string[] = [];

  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    const files = baseFiles();
    const metricsPort = await freePort();
    files["daemon.yaml"] = files["daemon.yaml"]!.replace(
      "worker:\n  concurrency: 2\n",
      `worker:\n  concurrency: 2\n  metrics_port: ${metricsPort}\n`,
    );
    files["daemon.yaml"] +=
      `auth:\n  tokens:\n    admin:\n      scopes: [admin]\n      secret: "\${ADMIN_TOKEN}"\n    reader:\n      scopes: [triggers:read]\n      secret: "\${READER_TOKEN}"\n` +
      `metrics:\n  token: "\${SCRAPER_TOKEN}"\n`;
    dir = await writeConfigDir(files, EXECUTABLES);
    const env = {
      HOOK_TOKEN: HOOK,
      LINEAR_SECRET: "unused",
      ADMIN_TOKEN: ADMIN,
      READER_TOKEN: READER,
      SCRAPER_TOKEN: SCRAPER,
      HOME: dir,
      SVC_CONFIG_DIR: dir,
      SVC_DATABASE_URL: database.url,
    };
    const started = await startIngress(env);
    ingress = started.role;
    url = started.url;
    worker = await startWorkerProcess({ ...env, SVC_DAEMON_URL: url });
    const listening = await worker.waitForLog(
      (l) => l.event === "worker.metrics_listening",
      "metrics listening",
    );
    workerUrl = `http://127.0.0.1:${listening.port}`;
    pool = new pg.Pool({ connectionString: database.url, max: 2 });

    const burst: Promise<string>[] = [];
    for (let i = 0; i < COMPLETED; i++)
      burst.push(postWebhook(url, "deploy-hook", HOOK, { marker: MARKER, i }));
    for (let i = 0; i < FAILED; i++) burst.push(postWebhook(url, "broken-hook", HOOK, { marker: MARKER, i }));
    triggers.push(...(await Promise.all(burst)));
    for (let i = 0; i < REFUSED; i++) {
      const refused = await fetch(`${url}/webhooks/deploy-hook`, {
        method: "POST",
        headers: { authorization: `Bearer wrong-${MARKER}`, "content-type": "application/json" },
        body: "{}",
      });
      expect(refused.status).toBe(401);
    }
    for (const id of triggers) await waitForTrigger(pool, id);
  }, 120_000);

  afterAll(async () => {
    await worker?.stop();
    await ingress?.stop();
    await pool?.end();
    await database?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const scrape = async (base: string, token?: string, headers: Record<string, string> = {}) => {
    const response = await fetch(`${base}/metrics`, {
      headers: { ...headers, ...(token ? { authorization: `Bearer ${token}` } : {}) },
    });
    return {
      status: response.status,
      type: response.headers.get("content-type"),
      text: await response.text(),
    };
  };

  it("the ingress answers the scraper token and admin, and refuses no token and a token without admin", async () => {
    // what a remote scraper sends through the reverse proxy; on bare loopback no token is needed
    expect((await scrape(url, undefined, { "x-forwarded-for": "203.0.113.7" })).status).toBe(401);
    expect((await scrape(url)).status).toBe(200);
    expect((await scrape(url, READER)).status).toBe(403);
    expect((await scrape(url, ADMIN)).status).toBe(200);
    const scraped = await scrape(url, SCRAPER);
    expect(scraped.status).toBe(200);
    expect(scraped.type).toContain("text/plain");
    // the scraper token is no API token
    expect((await fetch(`${url}/triggers`, { headers: { authorization: `Bearer ${SCRAPER}` } })).status).toBe(
      401,
    );
  });

  it("ingress counters equal the requests made, by route pattern and status", async () => {
    const families = (await scrape(url, SCRAPER)).text;
    const webhook = { method: "POST", route: "/webhooks/:name" };
    expect(value(families, "svc_http_requests_total", { ...webhook, status: "202" })).toBe(
      COMPLETED + FAILED,
    );
    expect(value(families, "svc_http_requests_total", { ...webhook, status: "401" })).toBe(REFUSED);
    expect(value(families, "svc_http_unauthorized_total", { route: "/webhooks/:name" })).toBe(REFUSED);
    expect(value(families, "svc_http_request_duration_seconds_count", webhook)).toBe(
      COMPLETED + FAILED + REFUSED,
    );
    expect(value(families, "svc_http_store_failures_total", {})).toBe(0);
  });

  it("worker counters equal the runs made: invocations by outcome and code, claims, step and agent durations", async () => {
    const { rows } = await pool.query<{ status: string; code: string | null; n: number }>(
      "SELECT status, diagnostic->>'code' AS code, count(*)::int AS n FROM svc.invocations GROUP BY 1, 2",
    );
    expect(rows.reduce((sum, row) => sum + row.n, 0)).toBe(COMPLETED + FAILED);
    const steps = (
      await pool.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM svc.tasks WHERE kind = 'setup' AND finished_at IS NOT NULL",
      )
    ).rows[0]!.n;
    const families = await waitFor(async () => {
      const text = (await scrape(workerUrl, SCRAPER)).text;
      return value(text, "svc_worker_setup_step_duration_seconds_count", {}) === steps ? text : undefined;
    }, "the worker's histograms to hold every step");
    const parsed = parsePrometheusTextFormat(families);
    for (const row of rows) {
      const labels =
        row.status === "completed"
          ? { outcome: "completed", code: "none" }
          : { outcome: row.status, code: row.code! };
      expect(value(families, "svc_worker_invocations_total", labels)).toBe(row.n);
    }
    expect(value(families, "svc_worker_invocations_total", {})).toBe(COMPLETED + FAILED);
    expect(value(families, "svc_worker_jobs_claimed_total", {})).toBeGreaterThanOrEqual(COMPLETED + FAILED);
    expect(value(families, "svc_worker_agent_duration_seconds_count", {})).toBe(COMPLETED);
    const lanes = parsed.find((f) => f.name === "svc_queue_jobs")!.metrics.map((m) => m.labels?.lane);
    expect(lanes).toContain("svc-dispatch");
    expect(parsed.map((f) => f.name)).toContain("svc_credentials");
  });

  it("the worker refuses a scrape without its token", async () => {
    expect((await scrape(workerUrl)).status).toBe(401);
    expect((await scrape(workerUrl, ADMIN)).status).toBe(401);
  });

  it("no label carries an id, a token or a payload value", async () => {
    for (const base of [url, workerUrl]) {
      const text = (await scrape(base, SCRAPER)).text;
      for (const secret of [HOOK, ADMIN, READER, SCRAPER, MARKER, ...triggers])
        expect(text).not.toContain(secret);
      expect(parsePrometheusTextFormat(text).length).toBeGreaterThan(3);
      for (const sample of samples(text)) {
        for (const [name, labelValue] of Object.entries(sample.labels)) {
          expect(ALLOWED_LABELS, `${sample.name} label ${name}`).toContain(name);
          expect(labelValue, `${sample.name}{${name}}`).not.toMatch(/(trg|run|inv|tsk|art)_[a-z2-7]{6,}/);
        }
      }
      const routes = new Set(
        samples(text)
          .filter((s) => s.name === "svc_http_requests_total")
          .map((s) => s.labels.route),
      );
      for (const route of routes) expect(route === "unmatched" || route?.startsWith("/")).toBe(true);
    }
  });
});
