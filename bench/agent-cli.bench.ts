/**
 * Agent CLI overhead (`npm run bench -- agent-cli`): what svc adds around one run of each pinned
 * CLI (claude-code, codex), against the same loopback model API.
 * - alone: the CLI started directly with the argv and environment svc gives it (svc's launch code),
 *   minus svc's MCP server: spawn → first model request, and last model answer → process exit;
 * - through svc: real `svc ingress` and `svc worker` processes, a bearer webhook per sample:
 *   webhook POST → first model request, agent task start → first model request, and last model
 *   answer → invocation recorded `completed` (result checked and stored, trigger settled).
 * The svc run also makes one more model request (the scripted submit_note call over svc's MCP
 * server, between the two measured ends). Timestamps: this process's wall clock for the fake's
 * requests, Postgres's `now()` for the records (same machine).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import type { AgentCliRuntime } from "../shared/agent-clis/pins.ts";
import { AGENT_CLIS } from "../shared/agent-clis/pins.ts";
import { FakeAnthropic } from "../test/e2e/agents/fake-anthropic.ts";
import { FakeResponses } from "../test/e2e/agents/fake-responses.ts";
import type { LoopbackModel } from "../test/e2e/agents/loopback-model.ts";
import {
  postWebhook,
  startIngress,
  startWorkerProcess,
  writeConfigDir,
} from "../test/e2e/worker/processes.ts";
import { installPinnedCli } from "../test/support/agent-clis.ts";
import { runProcessTree } from "../worker/process-tree.ts";
import { claudeCode } from "../worker/runtimes/agent-cli/claude-code.ts";
import { codex } from "../worker/runtimes/agent-cli/codex.ts";
import { cliEnvironment, freshHome } from "../worker/runtimes/agent-cli/isolation.ts";
import { database } from "./support/database.ts";

const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 10);
const KEY = "bench-key";
const RESULT = { summary: "done" };
const SCHEMA = { type: "object", properties: { summary: { type: "string" } }, required: ["summary"] };
const wallMs = () => performance.timeOrigin + performance.now();

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}
const fmt = (values: number[]) =>
  `median ${median(values).toFixed(0)} ms (min ${Math.min(...values).toFixed(0)}, max ${Math.max(...values).toFixed(0)})`;

/** The model answers between `from` (a request index) and now: the first request's arrival, the last answer's end. */
function window(fake: LoopbackModel, from: number, answeredFrom: number) {
  return {
    first: fake.requests[from]!.at,
    last: fake.answered.at(-1)!.at,
    requests: fake.requests.length - from,
    answered: fake.answered.length - answeredFrom,
  };
}

async function alone(runtime: AgentCliRuntime, fake: LoopbackModel, bin: string, apiUrl: string) {
  const cli = runtime === "codex" ? codex : claudeCode;
  const runDir = await mkdtemp(join(tmpdir(), "svc-bench-cli-"));
  const target = {
    name: "bench",
    runtime,
    model: runtime === "codex" ? "gpt-5" : "claude-sonnet-4-5",
    baseUrl: apiUrl,
    bin,
    timeoutMs: 60_000,
    credentials: [],
  };
  const access = { token: "", mcpUrl: "", env: {} };
  const startup: number[] = [];
  const ending: number[] = [];
  for (let sample = 0; sample < SAMPLES; sample += 1) {
    const home = await freshHome(runDir);
    const context = {
      target,
      pipeline: { result: { schema: SCHEMA } },
      prompt: { system: "You help.", user: "Summarise." },
      runDir,
      home,
      access,
      runEnv: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
      key: KEY,
    };
    const launch = await cli.launch(context);
    const from = fake.requests.length;
    const answeredFrom = fake.answered.length;
    const spawned = wallMs();
    const outcome = await runProcessTree({
      argv: launch.argv,
      cwd: runDir,
      env: cliEnvironment(context.runEnv, home, access, launch.env),
      stdin: launch.stdin,
      logFile: join(runDir, "transcript.log"),
      captureStdout: true,
      timeoutMs: 60_000,
    });
    const exited = wallMs();
    const report = await cli.report(outcome.stdout, context);
    if (!report.result)
      throw new Error(`${runtime} alone produced no result: ${report.error ?? outcome.stdout.slice(-500)}`);
    const seen = window(fake, from, answeredFrom);
    startup.push(seen.first - spawned);
    ending.push(exited - seen.last);
  }
  await rm(runDir, { recursive: true, force: true });
  return { startup, ending };
}

async function throughSvc(runtime: AgentCliRuntime, fake: LoopbackModel, bin: string, apiUrl: string) {
  const db = await database();
  const dir = await writeConfigDir({
    "daemon.yaml": `webhooks:
  sources:
    bench: { verify: bearer, secret: bench-hook-token }
targets:
  cli:
    runtime: ${runtime}
    model: ${runtime === "codex" ? "gpt-5" : "claude-sonnet-4-5"}
    base_url: ${apiUrl}
    bin: ${bin}
    timeout: 60s
    credentials: [{ name: k, secret: ${KEY} }]
  local: { runtime: command, command: [/bin/cat] }
ask:
  targets: [local]
`,
    "agents/helper/PERSONA.md": "---\nname: helper\ndescription: Helps.\n---\nYou help.\n",
    "pipelines/bench.yaml": `version: 1.0.0
agent: helper
trigger:
  webhook: [bench]
targets: [cli]
instructions: Keep a note, then summarise.
result:
  schema: ${JSON.stringify(SCHEMA)}
`,
  });
  const env = { SVC_CONFIG_DIR: dir, SVC_DATABASE_URL: db.url };
  const ingress = await startIngress(env);
  const worker = await startWorkerProcess({ ...env, SVC_DAEMON_URL: ingress.url });
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  const fromPost: number[] = [];
  const fromTask: number[] = [];
  const ending: number[] = [];
  let requests = 0;
  try {
    for (let sample = 0; sample < SAMPLES; sample += 1) {
      const from = fake.requests.length;
      const answeredFrom = fake.answered.length;
      const posted = wallMs();
      const id = await postWebhook(ingress.url, "bench", "bench-hook-token", {});
      const row = await settled(pool, id);
      if (row.status !== "completed")
        throw new Error(`${runtime} through svc: ${JSON.stringify(row.diagnostic)}`);
      const seen = window(fake, from, answeredFrom);
      requests = seen.requests;
      fromPost.push(seen.first - posted);
      fromTask.push(seen.first - row.task_started.getTime());
      ending.push(row.finished.getTime() - seen.last);
    }
  } finally {
    await pool.end();
    await worker.stop();
    await ingress.role.stop();
    await rm(dir, { recursive: true, force: true });
    await db.drop();
  }
  return { fromPost, fromTask, ending, requests };
}

async function settled(pool: pg.Pool, triggerId: string) {
  for (;;) {
    const { rows } = await pool.query(
      `SELECT i.status, i.diagnostic, i.finished_at AS finished,
              (SELECT t.started_at FROM svc.tasks t WHERE t.invocation_id = i.id AND t.kind = 'agent' ORDER BY t.seq LIMIT 1) AS task_started
         FROM svc.invocations i JOIN svc.workloads w ON w.id = i.workload_id
        WHERE w.trigger_id = $1 AND i.status IN ('completed', 'failed')`,
      [triggerId],
    );
    if (rows[0]) return rows[0];
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

for (const runtime of ["claude-code", "codex"] as const) {
  const fake = runtime === "codex" ? new FakeResponses() : new FakeAnthropic();
  await fake.start();
  fake.behave(KEY, { kind: "script", note: { title: "bench", body: "a note" }, result: RESULT });
  const bin = await installPinnedCli(runtime);
  const apiUrl = runtime === "codex" ? `${fake.url}/v1` : fake.url;
  console.log(
    `\n${AGENT_CLIS[runtime].package}, ${SAMPLES} runs each, load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`,
  );
  const bare = await alone(runtime, fake, bin, apiUrl);
  const svc = await throughSvc(runtime, fake, bin, apiUrl);
  console.log(`  alone:        spawn -> first model request          ${fmt(bare.startup)}`);
  console.log(`  through svc:  agent task start -> first request     ${fmt(svc.fromTask)}`);
  console.log(`                webhook POST -> first request         ${fmt(svc.fromPost)}`);
  console.log(`  alone:        last model answer -> exit             ${fmt(bare.ending)}`);
  console.log(`  through svc:  last model answer -> result recorded  ${fmt(svc.ending)}`);
  console.log(
    `  overhead (medians): start ${(median(svc.fromTask) - median(bare.startup)).toFixed(0)} ms from the task start, ${(median(svc.fromPost) - median(bare.startup)).toFixed(0)} ms from the POST; end ${(median(svc.ending) - median(bare.ending)).toFixed(0)} ms (model requests per svc run: ${svc.requests})`,
  );
  await fake.stop();
}
