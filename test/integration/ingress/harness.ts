import { Writable } from "node:stream";
import type pg from "pg";
import type { PgBoss } from "pg-boss";
import { startBoss } from "../../../db/boss.ts";
import { createPool } from "../../../db/connect.ts";
import { migrate } from "../../../db/migrate.ts";
import { createIngressApp } from "../../../ingress/app.ts";
import { listen } from "../../../ingress/server.ts";
import type { ConfigSnapshot } from "../../../shared/config/types.ts";
import { createLogger } from "../../../shared/logger.ts";
import { DISPATCH_QUEUE } from "../../../shared/queues.ts";

export interface Harness {
  url: string;
  pool: pg.Pool;
  boss: PgBoss;
  /** every log line the app wrote, parsed */
  logs: Record<string, unknown>[];
  /** the raw log text, to check that no secret ever reached it */
  logText(): string;
  close(): Promise<void>;
}

/** The ingress app on a loopback port, over a real database (optionally through another URL, e.g. a proxy). */
export async function startHarness(
  databaseUrl: string,
  config: ConfigSnapshot,
  options: { appDatabaseUrl?: string; now?: () => number } = {},
): Promise<Harness> {
  const setupPool = createPool(databaseUrl);
  await migrate(setupPool);
  await setupPool.end();
  const appUrl = options.appDatabaseUrl ?? databaseUrl;
  const pool = createPool(appUrl, { max: 8 });
  const boss = await startBoss({ url: appUrl, max: 2, supervise: false });
  let text = "";
  const logs: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      text += chunk.toString();
      for (const line of chunk.toString().split("\n")) if (line.trim()) logs.push(JSON.parse(line));
      done();
    },
  });
  const logger = createLogger({ role: "ingress", format: "json", level: "info", stream });
  const app = createIngressApp({
    config,
    pool,
    boss,
    logger,
    now: options.now,
    resolveSecret: (source) => {
      if (source.kind !== "inline") throw new Error("tests use inline secrets");
      return source.value;
    },
  });
  const server = await listen(app, "127.0.0.1", 0);
  return {
    url: `http://127.0.0.1:${server.port}`,
    pool,
    boss,
    logs,
    logText: () => text,
    close: async () => {
      await server.drain(1000);
      await boss.stop({ graceful: false, close: true });
      await pool.end();
    },
  };
}

export async function countRows(pool: pg.Pool): Promise<{ triggers: number; jobs: number }> {
  const { rows } = await pool.query(
    `SELECT (SELECT count(*)::int FROM svc.triggers) AS triggers,
            (SELECT count(*)::int FROM pgboss.job WHERE name = $1) AS jobs`,
    [DISPATCH_QUEUE],
  );
  return rows[0];
}

/** Status, every header but Date, and the body: what "byte-identical responses" compares. */
export async function wholeResponse(response: Response) {
  const headers = [...response.headers.entries()].filter(([name]) => name !== "date");
  return { status: response.status, headers, body: await response.text() };
}
