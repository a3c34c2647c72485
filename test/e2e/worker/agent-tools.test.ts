import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { lineage, waitForTrigger } from "../../integration/worker/helpers.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { baseFiles, EXECUTABLES } from "./config-fixture.ts";
import { FakeModelApi } from "./fake-model-api.ts";
import {
  postWebhook,
  type RoleProcess,
  startIngress,
  startWorkerProcess,
  writeConfigDir,
} from "./processes.ts";

const TOKEN = "e2e-tools-hook-token-0123456789";

/** A command agent that reaches the daemon's tools as any agent CLI would: SVC_MCP_URL + SVC_MCP_TOKEN. */
const NOTE_AGENT = `#!/usr/bin/env node
const { writeFileSync, readFileSync } = require("node:fs");
const run = process.env.RUN_DIR;
writeFileSync(run + "/agent-env.json", JSON.stringify(Object.keys(process.env).sort()));
writeFileSync(run + "/token.txt", process.env.SVC_MCP_TOKEN || "");
const config = JSON.parse(readFileSync(process.env.SVC_MCP_CONFIG, "utf8"));
fetch(process.env.SVC_MCP_URL, {
  method: "POST",
  headers: {
    authorization: "Bearer " + process.env.SVC_MCP_TOKEN,
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
  },
  body: JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "tools/call",
    params: { name: "submit_note", arguments: { title: "learned", body: "note from " + process.env.EVENT_NAME, tags: ["e2e"] } },
  }),
})
  .then((response) => response.json())
  .then((answer) => {
    const note = answer.result.structuredContent.id;
    console.log(JSON.stringify({ note, configUrl: config.mcpServers.svc.url, configType: config.mcpServers.svc.type }));
  })
  .catch((error) => {
    console.error(String(error));
    process.exit(3);
  });
`;

const COUNT_TOOL = `#!/bin/sh
echo "$1" >> "$COUNT_FILE"
echo "counted $1"
`;

describe("agents use the daemon's tools (real ingress + worker processes)", () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  let dir: string;
  let toolDir: string;
  let ingress: RoleProcess;
  let worker: RoleProcess;
  let url: string;
  const model = new FakeModelApi();

  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    await model.start();
    toolDir = await mkdtemp(join(tmpdir(), "svc-e2e-tool-"));
    await writeFile(join(toolDir, "count"), COUNT_TOOL, { mode: 0o755 });
    const toolCall = {
      role: "assistant",
      content: null,
      tool_calls: [
        { id: "call_1", type: "function", function: { name: "host_count", arguments: '{"label":"once"}' } },
      ],
    };
    model.answer("key-tools", {
      status: 200,
      messages: [toolCall, { role: "assistant", content: '{"answer": "counted"}' }],
    });
    model.answer("key-loop", { status: 200, messages: [toolCall] });
    const files = baseFiles(
      {
        sources: `    note-hook: { verify: bearer, secret: "\${HOOK_TOKEN}" }
    model-hook: { verify: bearer, secret: "\${HOOK_TOKEN}" }
    loop-hook: { verify: bearer, secret: "\${HOOK_TOKEN}" }`,
        targets: `  noter:
    runtime: command
    command: ["./bin/note-agent"]
    timeout: 30s
  model:
    runtime: openai
    base_url: ${model.url}
    model: test-model
    max_turns: 3
    credentials: [{ name: a, secret: key-tools }]
  looping:
    runtime: openai
    base_url: ${model.url}
    model: test-model
    max_turns: 2
    credentials: [{ name: a, secret: key-loop }]
host_tools:
  count:
    description: count one call
    input: { label: { type: string, required: true } }
    exec: ${join(toolDir, "count")}
    args: ["$label"]
    env: { COUNT_FILE: ${join(toolDir, "count.txt")} }`,
      },
      {
        "pipelines/tooling.yaml": `version: 1.0.0
agent: helper
trigger:
  webhook: [note-hook]
targets: [noter]
setup:
  - run: env > "$RUN_DIR/setup-env.txt"
instructions: keep a note
`,
        "pipelines/modelled.yaml": `version: 1.0.0
agent: helper
trigger:
  webhook: [model-hook]
targets: [model]
tools: [count]
instructions: count once, then answer
`,
        "pipelines/loop.yaml": `version: 1.0.0
agent: helper
trigger:
  webhook: [loop-hook]
targets: [looping]
tools: [count]
instructions: never stop
`,
      },
    );
    files["bin/note-agent"] = NOTE_AGENT;
    dir = await writeConfigDir(files, [...EXECUTABLES, "bin/note-agent"]);
    const env = {
      SVC_CONFIG_DIR: dir,
      SVC_DATABASE_URL: database.url,
      HOOK_TOKEN: TOKEN,
      LINEAR_SECRET: "x",
    };
    const started = await startIngress(env);
    ingress = started.role;
    url = started.url;
    worker = await startWorkerProcess({ ...env, SVC_DAEMON_URL: url });
    pool = new pg.Pool({ connectionString: database.url, max: 2 });
  });

  afterAll(async () => {
    await worker?.stop();
    await ingress?.stop();
    await model.stop();
    await pool?.end();
    await database?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
    if (toolDir) await rm(toolDir, { recursive: true, force: true });
  });

  it("a command agent submits a note over HTTP with its run token; the token dies with the run", async () => {
    const id = await postWebhook(url, "note-hook", TOKEN, { hello: "notes" });
    const trigger = await waitForTrigger(pool, id);
    const { workloads, invocations } = await lineage(pool, id);
    expect(trigger.status, JSON.stringify(invocations[0]?.diagnostic)).toBe("completed");
    const invocation = invocations[0];
    const result = invocation.result as { note: string; configUrl: string; configType: string };
    expect(result).toMatchObject({ configUrl: `${url}/mcp`, configType: "http" });
    const { rows } = await pool.query("SELECT * FROM svc.notes WHERE id = $1", [result.note]);
    expect(rows[0]).toMatchObject({
      invocation_id: invocation.id,
      pipeline: "tooling",
      agent: "helper",
      title: "learned",
      body: "note from note-hook",
      tags: ["e2e"],
    });
    const runDir = join(dir, "workspaces", workloads[0].id, invocation.id, "run");
    const agentEnv = JSON.parse(await readFile(join(runDir, "agent-env.json"), "utf8")) as string[];
    expect(agentEnv).toEqual(expect.arrayContaining(["SVC_MCP_URL", "SVC_MCP_TOKEN", "SVC_MCP_CONFIG"]));
    // setup steps see none of it
    const setupEnv = await readFile(join(runDir, "setup-env.txt"), "utf8");
    expect(setupEnv).not.toMatch(/^SVC_/m);
    // after the invocation ended, its token is refused
    const token = await readFile(join(runDir, "token.txt"), "utf8");
    expect(token).toMatch(/^svct_/);
    const after = await fetch(`${url}/mcp`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" }),
    });
    expect(after.status).toBe(401);
  });

  it("an openai target calls a host tool through tool_calls, then answers; both turns are in the transcript", async () => {
    const id = await postWebhook(url, "model-hook", TOKEN, {});
    const trigger = await waitForTrigger(pool, id);
    const { invocations, artifacts } = await lineage(pool, id);
    expect(trigger.status, JSON.stringify(invocations[0]?.diagnostic)).toBe("completed");
    expect(invocations[0].result).toEqual({ answer: "counted" });
    expect((await readFile(join(toolDir, "count.txt"), "utf8")).split("\n").filter(Boolean)).toEqual([
      "once",
    ]);
    const calls = model.requests.filter((r) => r.key === "key-tools" && r.path.endsWith("/chat/completions"));
    expect(calls).toHaveLength(2);
    const offered = (calls[0]!.body!.tools as { function: { name: string } }[]).map((t) => t.function.name);
    expect(offered).toEqual(expect.arrayContaining(["host_count", "submit_note", "search_notes"]));
    const fedBack = (
      calls[1]!.body!.messages as { role: string; tool_call_id?: string; content: string }[]
    ).find((m) => m.role === "tool");
    expect(fedBack).toMatchObject({ tool_call_id: "call_1" });
    expect(fedBack!.content).toContain("counted once");
    const transcript = artifacts.find((a) => a.name === "transcript")!;
    const text = (transcript as { rendered?: string }).rendered ?? (await readFile(transcript.path!, "utf8"));
    expect(text).toContain("# turn 1: response 200");
    expect(text).toContain("# tool host_count");
    expect(text).toContain("# turn 2: response 200");
  });

  it("an agent loop that never answers stops at max_turns with agent_turn_limit", async () => {
    const id = await postWebhook(url, "loop-hook", TOKEN, {});
    await waitForTrigger(pool, id);
    const { invocations } = await lineage(pool, id);
    expect(invocations[0].diagnostic).toMatchObject({ code: "agent_turn_limit" });
    const calls = model.requests.filter((r) => r.key === "key-loop" && r.path.endsWith("/chat/completions"));
    expect(calls).toHaveLength(2);
  });
});
