import { Writable } from "node:stream";
import type pg from "pg";
import type { PgBoss } from "pg-boss";
import { startBoss } from "../../../db/boss.ts";
import { createPool } from "../../../db/connect.ts";
import { migrate } from "../../../db/migrate.ts";
import { createIngressApp } from "../../../ingress/app.ts";
import { listen } from "../../../ingress/server.ts";
import { scheduleName } from "../../../shared/config/schedule.ts";
import type { ConfigSnapshot, Pipeline, Schedule } from "../../../shared/config/types.ts";
import { newId } from "../../../shared/ids.ts";
import { createLogger } from "../../../shared/logger.ts";

export function pipeline(name: string, extra: Partial<Pipeline> = {}): Pipeline {
  return {
    name,
    file: `pipelines/${name}.yaml`,
    version: "1.0.0",
    agent: "reviewer",
    companions: [],
    instructions: "do the thing",
    trigger: null,
    args: {},
    principals: {},
    outputs: {},
    env: {},
    setup: [],
    retainCheckout: false,
    checkout: { submodules: false, lfs: false, paths: [] },
    targets: ["local-agent"],
    knowledge: { method: "hybrid" },
    ...extra,
  };
}

/** A `trigger.schedule` entry as the loader reads it (named `<pipeline>`, `<pipeline>-2` …). */
export function schedule(
  pipelineName: string,
  cron: string,
  extra: { index?: number; timezone?: string; args?: Schedule["args"]; catchUp?: boolean } = {},
): Schedule {
  return {
    name: scheduleName(pipelineName, extra.index ?? 0),
    pipeline: pipelineName,
    cron,
    timezone: extra.timezone ?? "UTC",
    args: extra.args ?? {},
    catchUp: extra.catchUp ?? false,
  };
}

/** A snapshot as the loader would produce it, with pipelines, a host tool and the given auth block. */
export function apiConfig(auth: ConfigSnapshot["auth"], host = "127.0.0.1"): ConfigSnapshot {
  return {
    dir: "/nonexistent/.svc",
    server: { host, port: 0 },
    webhooks: { maxBodyBytes: 1024 * 1024, sources: {} },
    targets: {
      "local-agent": {
        name: "local-agent",
        runtime: "command",
        command: ["true"],
        timeoutMs: 60_000,
        credentials: [],
      },
    },
    ask: { targets: ["local-agent"] },
    knowledge: { retrieval: { engine: "local", rewrite: { targets: [] } } },
    repos: {},
    channels: { chat: { bots: {} } },
    queue: {},
    hostTools: {
      lint: {
        name: "lint",
        description: "echo the path",
        input: { path: { type: "string", required: true } },
        exec: "/bin/echo",
        args: ["checked", "$path"],
        env: {},
      },
    },
    auth,
    worker: { concurrency: 1, graceMs: 1000 },
    workspaces: {
      checkoutRetentionDays: 30,
      transcriptRetentionDays: 90,
      repoCache: { maxSizeBytes: 20 * 1024 ** 3 },
    },
    pipelines: {
      nightly: pipeline("nightly", {
        args: { label: { type: "string", required: true }, limit: { type: "number", required: false } },
        trigger: {
          webhook: [],
          codehost: [],
          tracker: [],
          schedule: [
            schedule("nightly", "30 2 * * *", { timezone: "Europe/Berlin", args: { label: "bug" } }),
            schedule("nightly", "0 12 * * 6", { index: 1, args: { label: "weekly", limit: 5 } }),
          ],
        },
      }),
      plain: pipeline("plain", {
        trigger: { webhook: [], codehost: [], tracker: [], schedule: [schedule("plain", "0 3 * * *")] },
      }),
    },
    agents: {},
    skills: {},
    policies: {},
    members: [],
  };
}

/** What nginx adds (deploy/nginx/svc-proxy.conf): the request of a remote client through a proxy. */
export const VIA_PROXY = { "x-forwarded-for": "203.0.113.7" } as const;

/** `auth.tokens` entries with inline secrets: name → scopes; the secret is `secret-<name>`. */
export function tokensBlock(tokens: Record<string, string[]>): NonNullable<ConfigSnapshot["auth"]>["tokens"] {
  return Object.fromEntries(
    Object.entries(tokens).map(([name, scopes]) => [
      name,
      { name, scopes, secret: { kind: "inline", value: `secret-${name}` } },
    ]),
  );
}

export interface ApiHarness {
  url: string;
  pool: pg.Pool;
  boss: PgBoss;
  logText(): string;
  request(
    method: string,
    path: string,
    options?: { token?: string; body?: unknown; headers?: Record<string, string> },
  ): Promise<Response>;
  close(): Promise<void>;
}

/** The real ingress app (webhooks + daemon API) on a loopback port over a migrated test database. */
export async function startApi(databaseUrl: string, config: ConfigSnapshot): Promise<ApiHarness> {
  const setup = createPool(databaseUrl);
  await migrate(setup);
  await setup.end();
  const pool = createPool(databaseUrl, { max: 6 });
  const boss = await startBoss({ url: databaseUrl, max: 2, supervise: false });
  let text = "";
  const stream = new Writable({
    write(chunk, _encoding, done) {
      text += chunk.toString();
      done();
    },
  });
  const logger = createLogger({ role: "ingress", format: "json", level: "info", stream });
  const app = createIngressApp({
    config,
    pool,
    boss,
    logger,
    resolveSecret: (source) => {
      if (source.kind !== "inline") throw new Error("tests use inline secrets");
      return source.value;
    },
  });
  const server = await listen(app, "127.0.0.1", 0);
  const url = `http://127.0.0.1:${server.port}`;
  return {
    url,
    pool,
    boss,
    logText: () => text,
    request: (method, path, options = {}) =>
      fetch(url + path, {
        method,
        headers: {
          ...options.headers,
          ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
          ...(options.body !== undefined ? { "content-type": "application/json" } : {}),
        },
        ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
      }),
    close: async () => {
      await server.drain(1000);
      await boss.stop({ graceful: false, close: true });
      await pool.end();
    },
  };
}

export interface SeededLineage {
  trigger: string;
  workload: string;
  invocation: string;
  task: string;
}

/** A finished run written as the worker would: trigger → workload → invocation → task + artifact. */
export async function seedLineage(
  pool: pg.Pool,
  options: { owner?: string | null; ids?: Partial<SeededLineage>; failed?: boolean } = {},
): Promise<SeededLineage> {
  const ids: SeededLineage = {
    trigger: options.ids?.trigger ?? newId("trigger"),
    workload: options.ids?.workload ?? newId("workload"),
    invocation: options.ids?.invocation ?? newId("invocation"),
    task: options.ids?.task ?? newId("task"),
  };
  const diagnostic = options.failed
    ? JSON.stringify({ code: "agent_timeout", message: "the agent ran past 20m" })
    : null;
  await pool.query(
    `INSERT INTO svc.triggers (id, kind, source, event_name, status, diagnostic, payload, owner)
     VALUES ($1, 'webhook', 'deploy-hook', 'deploy-hook', $2, $3, '{"ref":"main"}', $4)`,
    [ids.trigger, options.failed ? "error" : "completed", diagnostic, options.owner ?? null],
  );
  await pool.query(
    `INSERT INTO svc.workloads (id, trigger_id, pipeline, owner, status, workspace) VALUES ($1, $2, 'plain', $3, $4, '/tmp/ws')`,
    [ids.workload, ids.trigger, options.owner ?? null, options.failed ? "error" : "completed"],
  );
  await pool.query(
    `INSERT INTO svc.invocations (id, workload_id, status, diagnostic, target, attempts) VALUES ($1, $2, $3, $4, 'local-agent', 1)`,
    [ids.invocation, ids.workload, options.failed ? "failed" : "completed", diagnostic],
  );
  await pool.query(
    `INSERT INTO svc.tasks (id, invocation_id, kind, name, seq, status, exit_code) VALUES ($1, $2, 'agent', 'agent', 1, 'completed', 0)`,
    [ids.task, ids.invocation],
  );
  await pool.query(
    `INSERT INTO svc.artifacts (id, invocation_id, task_id, name, media_type, size, path, rendered)
     VALUES ($1, $2, $3, 'transcript', 'text/plain', 11, '/tmp/ws/transcript.txt', 'hello agent')`,
    [newId("artifact"), ids.invocation, ids.task],
  );
  return ids;
}
