import { cp, rm } from "node:fs/promises";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { waitFor } from "../../integration/worker/helpers.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import {
  postWebhook,
  type RoleProcess,
  startIngress,
  startWorkerProcess,
  writeConfigDir,
} from "../worker/processes.ts";

const FIXTURE = join(import.meta.dirname, "../../fixtures/knowledge/knowledge");
const HOOK = "hook-token-0123456789";

/** The agent calls the `search_knowledge` tool over the tool protocol with its run token, as its prompt tells it. */
const AGENT = `#!/bin/sh
prompt=$(cat)
case "$prompt" in *search_knowledge*) told=true ;; *) told=false ;; esac
call='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_knowledge","arguments":{"query":"restore backup","topK":1}}}'
found=$(curl -s -X POST "$SVC_MCP_URL" -H "authorization: Bearer $SVC_MCP_TOKEN" -H "content-type: application/json" \\
  -H "accept: application/json, text/event-stream" -d "$call" | grep -o 'knowledge/[a-z-]*[.]md' | head -n 1)
echo "{\\"told\\": $told, \\"found\\": \\"$found\\"}"
`;

describe("delivery search: the agent of a run searches the knowledge itself (real ingress, worker, qmd)", () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  let dir: string;
  let ingress: RoleProcess;
  let worker: RoleProcess;
  let url: string;

  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    dir = await writeConfigDir(
      {
        "daemon.yaml": `webhooks:\n  sources:\n    look-hook: { verify: bearer, secret: ${HOOK} }\ntargets:\n  local:\n    runtime: command\n    command: ["./bin/agent"]\n    timeout: 60s\nask:\n  targets: [local]\n`,
        "agents/helper/PERSONA.md": "---\nname: helper\ndescription: helps\n---\nYou help.\n",
        "pipelines/look.yaml":
          "version: 1.0.0\nagent: helper\ntrigger:\n  webhook: [look-hook]\ntargets: [local]\ninstructions: Find out how to restore.\nknowledge:\n  method: none\n  delivery: search\n",
        "bin/agent": AGENT,
      },
      ["bin/agent"],
    );
    await cp(FIXTURE, join(dir, "knowledge"), { recursive: true });
    const env = { SVC_CONFIG_DIR: dir, SVC_DATABASE_URL: database.url, HOME: dir };
    const started = await startIngress(env);
    ingress = started.role;
    url = started.url;
    worker = await startWorkerProcess({ ...env, SVC_DAEMON_URL: url });
    pool = new pg.Pool({ connectionString: database.url, max: 2 });
  });

  afterAll(async () => {
    await worker?.stop();
    await ingress?.stop();
    await pool?.end();
    await database?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("the prompt names the tool, and the agent finds the passage through search_knowledge on /mcp", async () => {
    const id = await postWebhook(url, "look-hook", HOOK, {});
    const invocation = await waitFor(async () => {
      const { rows } = await pool.query(
        "SELECT i.* FROM svc.invocations i JOIN svc.workloads w ON w.id = i.workload_id WHERE w.trigger_id = $1",
        [id],
      );
      return rows[0]?.status === "completed" || rows[0]?.status === "failed" ? rows[0] : undefined;
    }, "the run");
    expect(invocation.status, JSON.stringify(invocation.diagnostic)).toBe("completed");
    expect(invocation.result).toEqual({ told: true, found: "knowledge/backups.md" });
    expect(invocation.knowledge).toMatchObject({ method: "none", delivery: "search", method_used: null });
  });
});
