import { createHash, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import type pg from "pg";
import type { PgBoss } from "pg-boss";
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { listCooldowns } from "../db/credential-cooldowns.ts";
import { readSecrets } from "../db/secrets.ts";
import { listTaskDurations } from "../db/tasks.ts";
import { isLoopbackHost } from "../shared/config/network.ts";
import type { ConfigSnapshot } from "../shared/config/types.ts";
import type { Logger } from "../shared/logger.ts";
import { loopbackVerdict } from "../shared/loopback-client.ts";
import { readInstanceKey } from "../shared/secrets/instance-key.ts";

/**
 * The worker's Prometheus metrics, served on `worker.metrics_port` (off by default). Counters and
 * histograms are fed by a few calls from the claim loop and the end of a run; queue depth and
 * credential states are read from the database when scraped. No label carries an id, a token or a
 * payload value: only outcomes, diagnostic codes, task kinds, lanes (configured targets) and states.
 */
export const registry = new Registry();

const claimed = new Counter({
  name: "svc_worker_jobs_claimed_total",
  help: "queue jobs this worker claimed, by queue kind (dispatch, lane)",
  labelNames: ["queue"] as const,
  registers: [registry],
});
const invocations = new Counter({
  name: "svc_worker_invocations_total",
  help: "invocations this worker finished, by outcome (completed, failed) and diagnostic code (none when completed)",
  labelNames: ["outcome", "code"] as const,
  registers: [registry],
});
const setupSteps = new Histogram({
  name: "svc_worker_setup_step_duration_seconds",
  help: "duration of setup steps of finished invocations, by task status",
  labelNames: ["status"] as const,
  buckets: [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600],
  registers: [registry],
});
const agents = new Histogram({
  name: "svc_worker_agent_duration_seconds",
  help: "duration of agent runs of finished invocations, by target and task status",
  labelNames: ["target", "status"] as const,
  buckets: [1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600],
  registers: [registry],
});

const deliveries = new Counter({
  name: "svc_worker_output_deliveries_total",
  help: "output deliveries this worker finished, by handler and status (sent, reused: found by its marker, failed)",
  labelNames: ["handler", "status"] as const,
  registers: [registry],
});

const checkoutSeconds = new Histogram({
  name: "svc_checkout_seconds",
  help: "time to check out a run's repository, by kind: cold (its mirror made by this run) or warm (from the host's mirror)",
  labelNames: ["kind"] as const,
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
  registers: [registry],
});
const checkoutBytes = new Counter({
  name: "svc_checkout_bytes_total",
  help: "bytes checkouts' fetches added to the host's repository mirrors (packs as stored: what the code host sent, a thin pack completed with its bases)",
  registers: [registry],
});
const repoCacheBytes = new Gauge({
  name: "svc_repo_cache_bytes",
  help: "bytes the host's repository cache (workspaces/.repos) takes on disk, as of the last fetch",
  registers: [registry],
});

const gatewayCost = new Counter({
  name: "svc_gateway_cost_total",
  help: "USD the worker's model gateway charged runs at their targets' `price`, by pipeline and repository (a repository of daemon.yaml's `repos`, else empty)",
  labelNames: ["pipeline", "repo"] as const,
  registers: [registry],
});

/**
 * The repositories a cost may be labelled with: daemon.yaml's `repos` when the metrics server
 * started. Any other repository (a bearer webhook's `repo` is whatever its sender wrote) counts
 * under `repo=""`, so the label's values stay as few as the configuration names.
 */
let costRepos: ReadonlySet<string> = new Set();

export function setCostRepos(repos: Iterable<string>): void {
  costRepos = new Set(repos);
}

/** The gateway charged `usd` for one answer of a run of `pipeline` on `repo`. */
export function countGatewayCost(labels: { pipeline: string; repo: string | null }, usd: number): void {
  if (!(usd > 0)) return;
  const repo = labels.repo !== null && costRepos.has(labels.repo) ? labels.repo : "";
  gatewayCost.inc({ pipeline: labels.pipeline, repo }, usd);
}

/** A run's checkout ended: its time, and the bytes its fetch brought (0 when the mirror held everything). */
export function observeCheckout(kind: "cold" | "warm", seconds: number, bytes: number): void {
  checkoutSeconds.observe({ kind }, seconds);
  if (bytes > 0) checkoutBytes.inc(bytes);
}

export function setRepoCacheBytes(bytes: number): void {
  repoCacheBytes.set(bytes);
}

const CODE = /^[a-z][a-z0-9_]{0,63}$/;

/**
 * True once this process serves /metrics. The duration histograms cost a query per run, so a worker
 * without `worker.metrics_port` (the default) skips it; the counters cost nothing and always count.
 */
let serving = false;

/** One output delivery ended; `handler` is a handler id of the contract, never a key or a URL. */
export function countDelivery(handler: string, status: "sent" | "reused" | "failed"): void {
  deliveries.inc({ handler, status });
}

/** A claim-loop call site: `count` jobs of one queue kind were claimed. */
export function countClaimed(queue: "dispatch" | "lane", count: number): void {
  if (count > 0) claimed.inc({ queue }, count);
}

/**
 * The end of a run: counts it and observes its setup-step and agent durations, read back from its
 * task rows (one indexed query), so the run's own code needs this single call. Never throws: a
 * metric must not fail a run.
 */
export function recordInvocationEnd(
  pool: pg.Pool,
  invocationId: string,
  outcome: "completed" | "failed",
  code: string | undefined,
  logger: Logger,
): void {
  invocations.inc({
    outcome,
    code: outcome === "completed" ? "none" : code && CODE.test(code) ? code : "other",
  });
  if (!serving) return;
  listTaskDurations(pool, invocationId)
    .then((rows) => {
      for (const row of rows) {
        if (row.kind === "setup") setupSteps.observe({ status: row.status }, row.seconds);
        else agents.observe({ target: row.target ?? "none", status: row.status }, row.seconds);
      }
    })
    .catch((error: Error) => {
      // the counters above are already in; only this run's durations are missing from the histograms
      logger.warn("task durations not recorded", { event: "metrics.tasks_unread", error: error.message });
    });
}

/** Scrape-time gauges: queue depth through pg-boss's public API, credentials from svc's own table. */
function registerScrapeGauges(deps: { pool: pg.Pool; boss: PgBoss; lanes: readonly string[] }): void {
  registry.removeSingleMetric("svc_queue_jobs");
  registry.removeSingleMetric("svc_credentials");
  new Gauge({
    name: "svc_queue_jobs",
    help: "jobs per queue (lane) and state, from pg-boss's queue counts at scrape time",
    labelNames: ["lane", "state"] as const,
    registers: [registry],
    async collect() {
      this.reset();
      for (const queue of await deps.boss.getQueues([...deps.lanes])) {
        const lane = queue.name;
        this.set({ lane, state: "ready" }, queue.readyCount);
        this.set({ lane, state: "deferred" }, queue.deferredCount);
        this.set({ lane, state: "active" }, queue.activeCount);
        this.set({ lane, state: "failed" }, queue.failedCount);
      }
    },
  });
  new Gauge({
    name: "svc_credentials",
    help: "target credentials cooling down or dead, by target and state, at scrape time",
    labelNames: ["target", "state"] as const,
    registers: [registry],
    async collect() {
      this.reset();
      const counts = new Map<string, { target: string; state: string; n: number }>();
      for (const row of await listCooldowns(deps.pool)) {
        const key = `${row.target}\u0000${row.state}`;
        const entry = counts.get(key) ?? { target: row.target, state: row.state, n: 0 };
        entry.n += 1;
        counts.set(key, entry);
      }
      for (const { target, state, n } of counts.values()) this.set({ target, state }, n);
    },
  });
}

export interface MetricsServer {
  port: number;
  close(): Promise<void>;
}

/**
 * Serves `GET /metrics` on `worker.metrics_port`, bound to the daemon's `server.host`. The worker
 * cannot check API tokens (that is the ingress's job), so it accepts the scraper token
 * `metrics.token`; without one it serves only a local install (loopback bind, no `auth.tokens`).
 */
export async function startWorkerMetricsServer(deps: {
  config: Readonly<ConfigSnapshot>;
  pool: pg.Pool;
  boss: PgBoss;
  lanes: readonly string[];
  logger: Logger;
  /** the resolved `metrics.token`, when configured */
  token: string | undefined;
  port?: number;
}): Promise<MetricsServer> {
  const { config, logger } = deps;
  const host = config.server.host;
  const localInstall =
    isLoopbackHost(host) &&
    (!config.auth || (Object.keys(config.auth.tokens).length === 0 && !config.auth.broker));
  if (!deps.token && !localInstall) {
    throw new Error(
      `daemon.yaml: "worker.metrics_port" is set on a daemon that is not a local install (server.host ${host}${config.auth ? " with auth tokens" : ""}), but "metrics.token" is not - add "metrics: { token: \${METRICS_TOKEN} }" so scrapers authenticate`,
    );
  }
  registerScrapeGauges(deps);
  setCostRepos(Object.keys(config.repos));
  const expected = deps.token ? digest(deps.token) : undefined;
  const server = createServer((req, res) => {
    if (req.method !== "GET" || (req.url ?? "").split("?")[0] !== "/metrics") {
      res
        .writeHead(404, { "content-type": "application/json" })
        .end(
          JSON.stringify({ error: { code: "not_found", message: "the worker serves only GET /metrics" } }),
        );
      return;
    }
    // a local install's worker has no token to ask for: it serves local programs, never a web page
    // in the operator's browser (a DNS-rebinding name, a cross-site fetch)
    const verdict = expected ? undefined : loopbackVerdict(req);
    if (verdict && !verdict.local) {
      res.writeHead(401, { "content-type": "application/json" }).end(
        JSON.stringify({
          error: {
            code: "unauthenticated",
            message: `the worker's metrics answer only local programs on a local install, and this request is not one: ${verdict.refused ?? "it came through a proxy or from another host"}`,
          },
        }),
      );
      return;
    }
    if (expected && !bearerMatches(req, expected)) {
      res
        .writeHead(401, { "content-type": "application/json", "www-authenticate": 'Bearer realm="svc"' })
        .end(
          JSON.stringify({
            error: { code: "unauthenticated", message: "send `Authorization: Bearer <metrics.token>`" },
          }),
        );
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { "content-type": registry.contentType }).end(text),
      (error: Error) => {
        logger.warn("metrics scrape failed", { event: "metrics.scrape_failed", error: error.message });
        res.writeHead(503, { "content-type": "application/json" }).end(
          JSON.stringify({
            error: {
              code: "database_unavailable",
              message: "the queue counts could not be read; retry later",
            },
          }),
        );
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(deps.port ?? config.worker.metricsPort ?? 0, host, resolve);
  });
  const port = (server.address() as AddressInfo).port;
  serving = true;
  logger.info("worker metrics listening", { event: "worker.metrics_listening", host, port });
  return {
    port,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** `metrics.token` as configured: inline, or a stored secret decrypted with the instance key. */
export async function resolveMetricsToken(
  config: Readonly<ConfigSnapshot>,
  pool: pg.Pool,
  env: NodeJS.ProcessEnv,
): Promise<string | undefined> {
  const source = config.metrics?.token;
  if (!source) return undefined;
  if (source.kind === "inline") return source.value;
  const key = await readInstanceKey(env.SVC_INSTANCE_KEY_FILE ?? join(config.dir, "instance.key"));
  const value = (await readSecrets(pool, key, [source.name])).get(source.name);
  if (value === undefined)
    throw new Error(
      `"metrics.token_ref" names the stored secret ${source.name}, which the database does not hold; store it with \`svc setup\` and restart`,
    );
  return value;
}

function digest(value: string): Buffer {
  return createHash("sha256").update(value).digest();
}

function bearerMatches(req: IncomingMessage, expected: Buffer): boolean {
  const match = /^Bearer[ ]+([^\s]+)\s*$/i.exec(req.headers.authorization ?? "");
  return match !== null && timingSafeEqual(digest(match[1]!), expected);
}
