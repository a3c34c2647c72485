/**
 * Agent CLI overhead (`npm run bench -- agent-cli`): what svc adds around one run of each pinned
 * CLI (claude-code, codex), against the same loopback model API. Each sample is a pair, run one
 * right after the other so that the machine's load weighs on both alike:
 * - alone: the CLI started directly with the argv and environment svc gives it (svc's own launch
 *   code), minus svc's MCP server: spawn → first model request, last model answer → process exit;
 * - through svc: real `svc ingress` and `svc worker` processes, one bearer webhook: webhook POST →
 *   first model request, agent task start → first model request, last model answer → invocation
 *   recorded `completed` (result checked and stored, trigger settled), and agent task end (the CLI
 *   exited and its output was read) → invocation recorded: svc's own share of the end.
 * The svc run makes one more model request than the CLI alone (the scripted submit_note call over
 * svc's MCP server), between the two measured ends. Timestamps: this process's wall clock for the
 * fake's requests, Postgres's `now()` for the records (same machine). The figures are medians of
 * the samples and of the per-pair differences.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { AGENT_CLIS, type AgentCliRuntime } from "../shared/agent-clis/pins.ts";
import type { AgentCliTarget } from "../shared/config/types.ts";
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
import { runHere } from "../worker/exec/host/engine.ts";
import { claudeCode } from "../worker/runtimes/agent-cli/claude-code.ts";
import { codex } from "../worker/runtimes/agent-cli/codex.ts";
import { cliEnvironment, freshHome } from "../worker/runtimes/agent-cli/isolation.ts";
import { database } from "./support/database.ts";

const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 10);
const KEY = "bench-key";
const HOOK = "bench-hook-token";
const SCHEMA = { type: "object", properties: { summary: { type: "string" } }, required: ["summary"] };
const wallMs = () => performance.timeOrigin + performance.now();

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}
const fmt = (values: number[]) =>
  `median ${median(values).toFixed(0)} ms (min ${Math.min(...values).toFixed(0)}, max ${Math.max(...values).toFixed(0)})`;

/** The requests since index `from`: the first one's arrival and the last answer's end. */
function window(fake: LoopbackModel, from: number) {
  return {
    first: fake.requests[from]!.at,
    last: fake.answered.at(-1)!.at,
    requests: fake.requests.length - from,
  };
}

/** One run of the CLI by itself, as svc would start it but without svc's MCP server. */
async function alone(runtime: AgentCliRuntime, fake: LoopbackModel, target: AgentCliTarget, runDir: string) {
  const cli = runtime === "codex" ? codex : claudeCode;
  const access = { token: "", mcpUrl: "", env: {} };
  const home = await freshHome(runDir);
  const runEnv = { PATH: process.env.PATH ?? "/usr/bin:/bin" };
  const prompt = { system: "You help.", user: "Keep a note, then summarise." };
  const context = {
    target,
    pipeline: { result: { schema: SCHEMA } },
    prompt,
    // the CLI runs in RUN_DIR here: there is no worktree or configuration directory without svc
    cwd: runDir,
    configDir: runDir,
    agentDir: runDir,
    home,
    access,
    runEnv,
    key: KEY,
    baseUrl: target.baseUrl ?? fake.url,
  };
  const launch = await cli.launch(context);
  const from = fake.requests.length;
  const spawned = wallMs();
  const outcome = await runHere({
    argv: launch.argv,
    cwd: context.cwd,
    env: cliEnvironment(runEnv, home, access, launch.env),
    stdin: launch.stdin,
    logFile: join(runDir, "transcript.log"),
    captureStdout: true,
    timeoutMs: 120_000,
  });
  const exited = wallMs();
  const report = await cli.report(outcome.stdout, context);
  if (!report.result)
    throw new Error(`${runtime} alone: no result (${report.error ?? outcome.stdout.slice(-300)})`);
  const seen = window(fake, from);
  return { startup: seen.first - spawned, ending: exited - seen.last };
}

/** svc's processes with one pipeline on one target of `runtime`. */
async function startSvc(runtime: AgentCliRuntime, target: AgentCliTarget) {
  const db = await database();
  const dir = await writeConfigDir({
    "daemon.yaml": `webhooks:
  sources:
    bench: { verify: bearer, secret: ${HOOK} }
targets:
  cli:
    runtime: ${runtime}
    model: ${target.model}
    base_url: ${target.baseUrl}
    bin: ${target.bin}
    timeout: 120s
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
  return {
    url: ingress.url,
    pool,
    async stop() {
      await pool.end();
      await worker.stop();
      await ingress.role.stop();
      await rm(dir, { recursive: true, force: true });
      await db.drop();
    },
  };
}

/** One run through svc: a webhook, until the invocation is recorded. */
async function throughSvc(fake: LoopbackModel, svc: Awaited<ReturnType<typeof startSvc>>) {
  const from = fake.requests.length;
  const posted = wallMs();
  const id = await postWebhook(svc.url, "bench", HOOK, {});
  const row = await recorded(svc.pool, id);
  if (row.status !== "completed") throw new Error(`through svc: ${JSON.stringify(row.diagnostic)}`);
  const seen = window(fake, from);
  return {
    fromPost: seen.first - posted,
    fromTask: seen.first - row.task_started.getTime(),
    ending: row.finished.getTime() - seen.last,
    afterTask: row.finished.getTime() - row.task_finished.getTime(),
    requests: seen.requests,
  };
}

async function recorded(pool: pg.Pool, triggerId: string) {
  for (;;) {
    const { rows } = await pool.query(
      `SELECT i.status, i.diagnostic, i.finished_at AS finished,
              (SELECT t.started_at FROM svc.tasks t WHERE t.invocation_id = i.id AND t.kind = 'agent'
                ORDER BY t.seq LIMIT 1) AS task_started,
              (SELECT t.finished_at FROM svc.tasks t WHERE t.invocation_id = i.id AND t.kind = 'agent'
                ORDER BY t.seq LIMIT 1) AS task_finished
         FROM svc.invocations i JOIN svc.workloads w ON w.id = i.workload_id
        WHERE w.trigger_id = $1 AND i.status IN ('completed', 'failed')`,
      [triggerId],
    );
    if (rows[0]) return rows[0];
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

for (const runtime of ["claude-code", "codex"] as const) {
  const fake = runtime === "codex" ? new FakeResponses() : new FakeAnthropic();
  await fake.start();
  fake.behave(KEY, { kind: "script", note: { title: "bench", body: "a note" }, result: { summary: "done" } });
  const target: AgentCliTarget = {
    ...{ name: "bench", runtime, model: runtime === "codex" ? "gpt-5" : "claude-sonnet-4-5" },
    ...{ baseUrl: runtime === "codex" ? `${fake.url}/v1` : fake.url, bin: await installPinnedCli(runtime) },
    ...{ timeoutMs: 120_000, credentials: [] },
  };
  const runDir = await mkdtemp(join(tmpdir(), "svc-bench-cli-"));
  const svc = await startSvc(runtime, target);
  const pairs: { bare: Awaited<ReturnType<typeof alone>>; run: Awaited<ReturnType<typeof throughSvc>> }[] =
    [];
  const load = loadavg()[0]!;
  try {
    await throughSvc(fake, svc); // the first run pages the CLI and the worker's paths in: not counted
    for (let sample = 0; sample < SAMPLES; sample += 1)
      pairs.push({ bare: await alone(runtime, fake, target, runDir), run: await throughSvc(fake, svc) });
  } finally {
    await svc.stop();
    await fake.stop();
    await rm(runDir, { recursive: true, force: true });
  }
  const col = <T>(pick: (pair: (typeof pairs)[number]) => T) => pairs.map(pick) as number[];
  console.log(
    `\n${AGENT_CLIS[runtime].package}: ${SAMPLES} pairs, load average ${load.toFixed(2)} → ${loadavg()[0]!.toFixed(2)}`,
  );
  console.log(`  alone:        spawn -> first model request          ${fmt(col((p) => p.bare.startup))}`);
  console.log(`  through svc:  agent task start -> first request     ${fmt(col((p) => p.run.fromTask))}`);
  console.log(`                webhook POST -> first request         ${fmt(col((p) => p.run.fromPost))}`);
  console.log(`  alone:        last model answer -> exit             ${fmt(col((p) => p.bare.ending))}`);
  console.log(`  through svc:  last model answer -> result recorded  ${fmt(col((p) => p.run.ending))}`);
  console.log(`                agent task end -> result recorded     ${fmt(col((p) => p.run.afterTask))}`);
  console.log(
    `  svc's overhead, median of the pairs' differences: start ${fmt(col((p) => p.run.fromTask - p.bare.startup))} from the agent task, ${fmt(col((p) => p.run.fromPost - p.bare.startup))} from the POST; end ${fmt(col((p) => p.run.ending - p.bare.ending))} (model requests per svc run: ${pairs[0]?.run.requests})`,
  );
}
