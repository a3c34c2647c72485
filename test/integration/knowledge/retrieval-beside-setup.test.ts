import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import type pg from "pg";
import type { PgBoss } from "pg-boss";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startBoss } from "../../../db/boss.ts";
import { createPool } from "../../../db/connect.ts";
import { migrate } from "../../../db/migrate.ts";
import { type RunningWorker, startWorker } from "../../../worker/main.ts";
import { FakeChatApi } from "../../e2e/knowledge/fake-chat-api.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import {
  captureLogger,
  commandTarget,
  fire,
  lineage,
  makeConfig,
  pipeline,
  waitForTrigger,
  writeScript,
} from "../worker/helpers.ts";
import { corpusDir } from "./support.ts";

const REWRITE_TIMEOUT_MS = 1_500;

/** The agent says whether the passage reached its prompt. */
const AGENT = `#!/bin/sh
prompt=$(cat)
case "$prompt" in *pg_restore*) echo '{"passage": true}' ;; *) echo '{"passage": false}' ;; esac
`;

/**
 * A run's retrieval waits on a query rewrite (a model call, here one that never answers and is cut
 * off after 1.5 s). The setup steps do not wait for it: they start at once, and the agent still gets
 * the passage, found with the original text.
 */
describe("retrieval runs beside the setup steps, not before them", { timeout: 60_000 }, () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  let boss: PgBoss;
  let worker: RunningWorker;
  let dir: string;
  const models = new FakeChatApi();

  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    pool = createPool(database.url);
    await migrate(pool);
    await models.start();
    models.on("k-slow", { kind: "hang" });
    dir = await corpusDir("svc-beside-");
    await writeScript(join(dir, "agent"), AGENT);
    const config = makeConfig(dir, {
      targets: {
        local: commandTarget("local", [join(dir, "agent")]),
        slow: {
          name: "slow",
          runtime: "openai",
          baseUrl: models.url,
          model: "m-slow",
          timeoutMs: REWRITE_TIMEOUT_MS,
          credentials: [{ name: "k", secret: { kind: "inline", value: "k-slow" } }],
        },
      },
      knowledge: { retrieval: { engine: "local", rewrite: { targets: ["slow"] } } },
      pipelines: {
        restore: pipeline("restore", {
          agent: "helper",
          trigger: { webhook: ["restore-hook"], codehost: [], tracker: [] },
          targets: ["local"],
          instructions: "The database was lost overnight: restore it from the backup.",
          setup: [{ run: 'date +%s%3N > "$RUN_DIR/setup-started"' }],
          knowledge: { method: "bm25", delivery: "prompt" },
        }),
      },
    });
    boss = await startBoss({ url: database.url, supervise: false });
    worker = await startWorker({ config, databaseUrl: database.url, logger: captureLogger().logger });
  });

  afterAll(async () => {
    await worker?.stop(1_000);
    await boss?.stop({ graceful: false });
    await models.stop();
    await pool?.end();
    await database?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("the setup step starts while the rewrite is pending, and the prompt still carries the passage", async () => {
    const id = await fire(pool, boss, { kind: "webhook", source: "restore-hook", eventName: "restore-hook" });
    const trigger = await waitForTrigger(pool, id);
    const { invocations } = await lineage(pool, id);
    const invocation = invocations[0]!;
    expect(trigger.status, JSON.stringify(invocation.diagnostic)).toBe("completed");
    expect(invocation.result).toEqual({ passage: true });
    const rewriteAsked = models.requests.find((request) => request.key === "k-slow");
    expect(rewriteAsked).toBeDefined();
    const setupStarted = Number(
      await readFile(
        join(dir, "workspaces", invocation.workload_id, invocation.id, "run", "setup-started"),
        "utf8",
      ),
    );
    // before the rewrite was given up on: the step did not wait for retrieval
    expect(setupStarted - rewriteAsked!.at).toBeLessThan(REWRITE_TIMEOUT_MS - 500);
  });
});
