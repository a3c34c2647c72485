import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import type pg from "pg";
import type { PgBoss } from "pg-boss";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startBoss } from "../../../db/boss.ts";
import { createPool } from "../../../db/connect.ts";
import { migrate } from "../../../db/migrate.ts";
import type { Pipeline } from "../../../shared/config/types.ts";
import { type RunningWorker, startWorker } from "../../../worker/main.ts";
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

/** The agent reports what it saw: the passage in its prompt, the copied file, the catalogue. */
const AGENT = `#!/bin/sh
cat > "$RUN_DIR/prompt.txt"
seen() { grep -q "$1" "$2" 2>/dev/null && echo true || echo false; }
echo "{\\"prompt\\": $(seen pg_restore "$RUN_DIR/prompt.txt"), \\"heading\\": $(seen '^## Knowledge' "$RUN_DIR/prompt.txt"), \\"file\\": $(seen pg_restore "$RUN_DIR/knowledge/backups.md"), \\"nested\\": $(seen webhook "$RUN_DIR/knowledge/ops/rotation.md"), \\"catalog\\": $(seen 'knowledge/backups.md' "$RUN_DIR/knowledge/CATALOG.md")}"
`;

describe("knowledge delivered into runs: a command agent sees it", { timeout: 120_000 }, () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  let boss: PgBoss;
  let worker: RunningWorker;
  let dir: string;
  const { logger, lines } = captureLogger();

  const deliver = (name: string, knowledge: Pipeline["knowledge"]) =>
    pipeline(name, {
      agent: "helper",
      trigger: { webhook: [`${name}-hook`], codehost: [], tracker: [] },
      targets: ["local"],
      instructions: "The database was lost overnight: restore it from the backup.",
      knowledge,
    });

  const run = async (name: string) => {
    const id = await fire(pool, boss, { kind: "webhook", source: `${name}-hook`, eventName: `${name}-hook` });
    const trigger = await waitForTrigger(pool, id);
    const { invocations } = await lineage(pool, id);
    expect(trigger.status, JSON.stringify(invocations[0]?.diagnostic)).toBe("completed");
    return invocations[0];
  };

  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    pool = createPool(database.url);
    await migrate(pool);
    dir = await corpusDir("svc-delivery-");
    await writeScript(join(dir, "agent"), AGENT);
    const config = makeConfig(dir, {
      targets: { local: commandTarget("local", [join(dir, "agent")]) },
      pipelines: {
        prompted: deliver("prompted", { method: "bm25", delivery: "prompt" }),
        hybrid: deliver("hybrid", { method: "hybrid" }),
        mounted: deliver("mounted", { method: "none", delivery: "file" }),
        // its first step fails unless the documents are in place before any process of the run
        placed: {
          ...deliver("placed", { method: "none", delivery: "file" }),
          setup: [{ run: 'test -f "$RUN_DIR/knowledge/backups.md"' }],
        },
        browsing: deliver("browsing", { method: "none", delivery: "browse" }),
        searching: deliver("searching", { method: "none", delivery: "search" }),
        plain: deliver("plain", { method: "none" }),
        // no agent task to carry the record: a failed setup step, and a pipeline without targets
        broken: {
          ...deliver("broken", { method: "bm25", delivery: "prompt" }),
          setup: [{ run: "exit 3" }],
        },
        agentless: { ...deliver("agentless", { method: "bm25", delivery: "prompt" }), targets: [] },
      },
    });
    boss = await startBoss({ url: database.url, supervise: false });
    worker = await startWorker({ config, databaseUrl: database.url, logger, heartbeatMs: 500 });
  });

  afterAll(async () => {
    await worker?.stop(1_000);
    await boss?.stop({ graceful: false });
    await pool?.end();
    await database?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("prompt: the passage is in the agent's prompt under ## Knowledge with its path and line", async () => {
    const invocation = await run("prompted");
    expect(invocation.result).toMatchObject({ prompt: true, heading: true, file: false, catalog: false });
    expect(invocation.knowledge).toMatchObject({ method: "bm25", method_used: "bm25", delivery: "prompt" });
    expect(invocation.knowledge.sources[0].path).toBe("knowledge/backups.md");
    const prompt = await readFile(
      join(dir, "workspaces", invocation.workload_id, invocation.id, "run", "prompt.txt"),
      "utf8",
    );
    expect(prompt).toMatch(/### knowledge\/backups\.md:\d+/);
  });

  it("hybrid without vectors: the run gets BM25 passages and records method_used bm25", async () => {
    const invocation = await run("hybrid");
    expect(invocation.result).toMatchObject({ prompt: true });
    expect(invocation.knowledge).toMatchObject({ method: "hybrid", method_used: "bm25", delivery: "prompt" });
    expect(lines.some((line) => line.includes("knowledge.hybrid_without_vectors"))).toBe(true);
  });

  it("file: the sources are under RUN_DIR/knowledge/, read-only, paths kept; nothing in the prompt", async () => {
    const invocation = await run("mounted");
    expect(invocation.result).toMatchObject({ prompt: false, file: true, nested: true, catalog: false });
    expect(invocation.knowledge).toMatchObject({ method: "none", method_used: null, delivery: "file" });
  });

  it("file: the documents are in place before the run's first process, so no step races the copy", async () => {
    const invocation = await run("placed");
    expect(invocation.result).toMatchObject({ file: true });
  });

  it("browse: RUN_DIR/knowledge/CATALOG.md lists every document with title, path and first line", async () => {
    const invocation = await run("browsing");
    expect(invocation.result).toMatchObject({ prompt: false, catalog: true, file: true });
    const catalog = await readFile(
      join(dir, "workspaces", invocation.workload_id, invocation.id, "run", "knowledge", "CATALOG.md"),
      "utf8",
    );
    expect(catalog).toContain("- **Backups** — `knowledge/backups.md` — Postgres backups run nightly");
    expect(catalog.split("\n").filter((line) => line.startsWith("- "))).toHaveLength(8);
  });

  it("search and none: no passages in the prompt, nothing in the run directory", async () => {
    for (const name of ["searching", "plain"]) {
      const invocation = await run(name);
      expect(invocation.result).toMatchObject({ prompt: false, file: false, catalog: false });
    }
  });

  it("a run that never starts an agent still records what knowledge it was given", async () => {
    // the record rides on the agent's first task start; these runs have none (run-invocation.ts)
    const broken = await fire(pool, boss, {
      kind: "webhook",
      source: "broken-hook",
      eventName: "broken-hook",
    });
    expect((await waitForTrigger(pool, broken)).status).toBe("error");
    const failed = (await lineage(pool, broken)).invocations[0];
    expect(failed.diagnostic.code).toBe("setup_failed");
    expect(failed.knowledge).toMatchObject({ method: "bm25", method_used: "bm25", delivery: "prompt" });
    expect(failed.knowledge.sources[0].path).toBe("knowledge/backups.md");
    const agentless = await run("agentless");
    expect(agentless.knowledge).toMatchObject({ method: "bm25", method_used: "bm25", delivery: "prompt" });
    expect(agentless.knowledge.sources[0].path).toBe("knowledge/backups.md");
  });
});
