/**
 * `svc ingress` against a bare Express 5 + pg handler doing the same two inserts in one transaction.
 * Both run as their own processes over the same database; this process is the load: autocannon,
 * keep-alive HTTP at concurrency 32, bearer-authenticated JSON bodies of ~1 KiB. Rounds alternate between
 * the two so that noise from the machine lands on both; figures pool each side's rounds.
 *
 * The baseline stores each request in its own transaction; svc stores the deliveries that arrive
 * while its transactions are busy together (ingress/webhooks/batched-recorder.ts). Both answer only
 * after a request's rows have committed, so the ratio is what that group commit buys, next to the
 * cost of svc's verification, logging and metrics.
 *
 * A third process, the same ingress at SVC_LOG_LEVEL=warn, runs the same rounds: its CPU per request
 * against the first one's is the logger's share (the per-request line through winston).
 *
 * Database: SVC_BENCH_DATABASE_URL, else SVC_TEST_DATABASE_URL, else SVC_DATABASE_URL (a server on
 * which it may create and drop a database), else an embedded Postgres in a temporary directory.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmod, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import autocannon from "autocannon";
import pg from "pg";
import { startBoss } from "../db/boss.ts";
import { createPool } from "../db/connect.ts";
import { startEmbeddedPostgres } from "../db/embedded.ts";
import { migrate } from "../db/migrate.ts";
import { DEFAULT_POOL_SIZE } from "../ingress/main.ts";
import { cpuMs } from "./support/proc-cpu.ts";

const CONCURRENCY = 32;
const WARMUP = 1_000;
const PER_ROUND = 3_000;
const ROUNDS = 3;
const TOKEN = randomBytes(24).toString("base64url");
const ROOT = join(import.meta.dirname, "..");
const NODE = process.execPath;

interface RoundResult {
  seconds: number;
  accepted: number;
  /** CPU the server process spent on the round (user + system) */
  cpuMs: number;
  /** CPU the database's backends for the bench database spent on the round (0 when Postgres is not local) */
  dbCpuMs: number;
  /** the load generator's CPU over the round, in cores (1 = one core busy all the time) */
  clientCpuShare: number;
  p50: number;
  p99: number;
  failures: number;
}

/** user + system CPU of a process, from /proc (Linux); 0 elsewhere or once it is gone */
function cpuMsOf(pid: number | undefined): number {
  try {
    return pid === undefined ? 0 : cpuMs(pid);
  } catch {
    return 0;
  }
}

const BODY = JSON.stringify({
  ref: "refs/heads/main",
  commits: [{ id: randomBytes(20).toString("hex"), message: "x".repeat(900) }],
});

/**
 * One round of `count` webhooks from autocannon at CONCURRENCY keep-alive connections. The client's
 * own CPU over the round is measured too: near one full core, the client (not the server) would be
 * the limit and the ratio would mean nothing.
 */
async function load(
  port: number,
  count: number,
  pid?: number,
  backends: () => Promise<number[]> = async () => [],
): Promise<RoundResult> {
  const dbBefore = new Map((await backends()).map((backend) => [backend, cpuMsOf(backend)]));
  const cpuBefore = cpuMsOf(pid);
  const clientBefore = process.cpuUsage();
  const started = performance.now();
  let lastResponse = started;
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const run = autocannon(
      {
        url: `http://127.0.0.1:${port}/webhooks/bench`,
        method: "POST",
        connections: CONCURRENCY,
        amount: count,
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
        body: BODY,
        expectBody: undefined,
      },
      (error, finished) => (error ? reject(error) : resolve(finished)),
    );
    run.on("response", () => {
      lastResponse = performance.now();
    });
  });
  const client = process.cpuUsage(clientBefore);
  const cpuMs = cpuMsOf(pid) - cpuBefore;
  // a backend that started during the round counts from zero; one that ended is lost (rare: the pools keep theirs)
  let dbCpuMs = 0;
  for (const backend of await backends()) dbCpuMs += cpuMsOf(backend) - (dbBefore.get(backend) ?? 0);
  // not result.duration: with `amount`, autocannon notices the end only at its next 1 s sample tick,
  // so its duration is rounded up to whole seconds (±30% on a 3 s round)
  const seconds = (lastResponse - started) / 1000;
  const accepted = result["2xx"];
  return {
    seconds,
    accepted,
    failures: result.non2xx + result.errors + result.timeouts,
    cpuMs,
    dbCpuMs,
    clientCpuShare: (client.user + client.system) / 1e6 / seconds,
    p50: result.latency.p50,
    p99: result.latency.p99,
  };
}

function startChild(
  args: string[],
  env: NodeJS.ProcessEnv,
  portOf: (line: Record<string, unknown>) => number | undefined,
) {
  const child = spawn(NODE, args, { cwd: ROOT, env, stdio: ["ignore", "pipe", "inherit"] });
  const port = new Promise<number>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.on("line", (text) => {
      try {
        const found = portOf(JSON.parse(text) as Record<string, unknown>);
        if (!found) return;
        resolve(found);
        // from here on the output is drained unread: parsing svc's line per request would spend this
        // process's CPU (the load generator's) on svc's side of the comparison only
        lines.close();
        child.stdout!.resume();
      } catch {
        // not JSON: ignore
      }
    });
    child.on("exit", (code) => reject(new Error(`${args.join(" ")} exited with ${code}`)));
  });
  return { child, port };
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.on("exit", resolve));
  child.kill("SIGTERM");
  await exited;
}

async function main() {
  const work = await mkdtemp(join(tmpdir(), "svc-bench-"));
  await chmod(work, 0o755);
  let stopEmbedded: (() => Promise<void>) | undefined;
  const configured =
    process.env.SVC_BENCH_DATABASE_URL ?? process.env.SVC_TEST_DATABASE_URL ?? process.env.SVC_DATABASE_URL;
  let adminUrl: string;
  if (configured) adminUrl = configured;
  else {
    const embedded = await startEmbeddedPostgres({ dataDir: join(work, "postgres") });
    adminUrl = embedded.url;
    stopEmbedded = embedded.stop;
  }
  const name = `svc_bench_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const databaseUrl = url.toString();
  const children: ChildProcess[] = [];
  try {
    const pool = createPool(databaseUrl, { max: 2 });
    await migrate(pool);
    const boss = await startBoss({ url: databaseUrl, max: 1, supervise: false });
    await boss.stop({ graceful: false, close: true });

    const configDir = join(work, ".svc");
    await mkdir(configDir, { recursive: true });
    await writeFile(
      join(configDir, "daemon.yaml"),
      `server:\n  host: 127.0.0.1\n  port: 7420\nwebhooks:\n  sources:\n    bench:\n      verify: bearer\n      secret: \${BENCH_TOKEN}\n` +
        `targets:\n  local:\n    runtime: command\n    command: ["cat"]\n    timeout: 1m\nask:\n  targets: [local]\n`,
    );
    const startSvc = async (level: string) => {
      const port = await freePort();
      const started = startChild(
        [join(ROOT, "bin/svc.js"), "ingress"],
        {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          SVC_CONFIG_DIR: configDir,
          SVC_DATABASE_URL: databaseUrl,
          SVC_PORT: String(port),
          SVC_LOG_FORMAT: "json",
          SVC_LOG_LEVEL: level,
          BENCH_TOKEN: TOKEN,
        },
        (line) => (line.event === "ingress.listening" ? Number(line.port) : undefined),
      );
      // at warn the ingress prints no listening line: it is ready once /health answers
      return { child: started.child, port: Promise.race([started.port, healthy(port)]) };
    };
    const svc = await startSvc("info");
    // the same ingress with the per-request line off: the difference in CPU per request is the logger's share
    const quiet = await startSvc("warn");
    const bare = startChild(
      [join(ROOT, "bench/support/bare-ingress.ts"), databaseUrl, String(DEFAULT_POOL_SIZE)],
      { PATH: process.env.PATH },
      (line) => (typeof line.port === "number" ? line.port : undefined),
    );
    children.push(svc.child, quiet.child, bare.child);
    const targets = { bare: await bare.port, svc: await svc.port, quiet: await quiet.port };
    const pids = { bare: bare.child.pid, svc: svc.child.pid, quiet: quiet.child.pid };
    // Postgres's processes serving the bench database: their CPU shares the machine's cores with the
    // server's, so a heavier statement costs throughput even when the server's own CPU looks the same
    const backends = async () =>
      (
        await admin.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE datname = $1", [name])
      ).rows.map((row) => row.pid);

    for (const port of Object.values(targets)) {
      const warm = await load(port, WARMUP);
      if (warm.failures) throw new Error(`${warm.failures} warm-up requests failed on port ${port}`);
    }
    const results: Record<keyof typeof targets, RoundResult[]> = { bare: [], svc: [], quiet: [] };
    for (let round = 0; round < ROUNDS; round++) {
      for (const which of ["bare", "svc", "quiet"] as const)
        results[which].push(await load(targets[which], PER_ROUND, pids[which], backends));
    }

    const summary = (rounds: RoundResult[]) => {
      const accepted = rounds.reduce((sum, r) => sum + r.accepted, 0);
      const seconds = rounds.reduce((sum, r) => sum + r.seconds, 0);
      const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
      return {
        perSecond: accepted / seconds,
        // autocannon reports percentiles per round: the median round's
        p50: median(rounds.map((r) => r.p50)),
        p99: median(rounds.map((r) => r.p99)),
        clientCpu: Math.max(...rounds.map((r) => r.clientCpuShare)),
        failures: rounds.reduce((sum, r) => sum + r.failures, 0),
        cpuPerRequest: rounds.reduce((sum, r) => sum + r.cpuMs, 0) / Math.max(1, accepted),
        dbCpuPerRequest: rounds.reduce((sum, r) => sum + r.dbCpuMs, 0) / Math.max(1, accepted),
      };
    };
    const s = summary(results.svc);
    const b = summary(results.bare);
    const q = summary(results.quiet);
    const row = (label: string, x: ReturnType<typeof summary>) =>
      `${label.padEnd(34)} ${x.perSecond.toFixed(0).padStart(7)} /s   p50 ${x.p50.toFixed(2).padStart(6)} ms   p99 ${x.p99.toFixed(2).padStart(6)} ms   server CPU ${(x.cpuPerRequest * 1000).toFixed(0).padStart(4)} us/req   database CPU ${(x.dbCpuPerRequest * 1000).toFixed(0).padStart(4)} us/req   client CPU ${(x.clientCpu * 100).toFixed(0)}% of a core   failed ${x.failures}`;
    console.log(
      `accepted webhooks, concurrency ${CONCURRENCY}, ${ROUNDS} alternating rounds of ${PER_ROUND} each, pool ${DEFAULT_POOL_SIZE}`,
    );
    console.log(row("svc ingress", s));
    console.log(row("svc ingress, SVC_LOG_LEVEL=warn", q));
    console.log(row("bare express 5 + pg (baseline)", b));
    const loggerUs = (s.cpuPerRequest - q.cpuPerRequest) * 1000;
    console.log(
      `logger's share: ${loggerUs.toFixed(0)} us of ${(s.cpuPerRequest * 1000).toFixed(0)} us server CPU per request (${((100 * loggerUs) / (s.cpuPerRequest * 1000)).toFixed(1)}%; the request line at info against none at warn)`,
    );
    const ratio = s.perSecond / b.perSecond;
    console.log(
      `ratio svc / baseline: ${ratio.toFixed(2)} (target >= 0.90: ${ratio >= 0.9 ? "met" : "MISSED"}); svc p99 ${s.p99.toFixed(2)} ms`,
    );
    const busiest = Math.max(s.clientCpu, b.clientCpu);
    console.log(
      `load generator: autocannon, at most ${(busiest * 100).toFixed(0)}% of one core${busiest > 0.9 ? " (near saturation: the client may be the bottleneck)" : " (not the bottleneck)"}; load average ${loadavg()
        .map((n) => n.toFixed(2))
        .join(", ")}`,
    );
    if (s.failures || b.failures || q.failures) process.exitCode = 1;
  } finally {
    for (const child of children) await stopChild(child);
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await admin.end();
    if (stopEmbedded) await stopEmbedded();
    await rm(work, { recursive: true, force: true });
  }
}

async function healthy(port: number): Promise<number> {
  for (let tries = 0; tries < 600; tries++) {
    const ok = await fetch(`http://127.0.0.1:${port}/health`).then(
      (response) => response.ok,
      () => false,
    );
    if (ok) return port;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`the ingress on port ${port} never answered /health`);
}

async function freePort(): Promise<number> {
  const { createServer } = await import("node:net");
  return await new Promise((resolve) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

await main();
