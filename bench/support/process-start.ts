/**
 * Run by bench/worker.bench.ts as a process of its own, small like the worker's spawner: starts the
 * latency pipeline's setup step (`sh -c 'date +%s%N > "$RUN_DIR/started"'`) `runs` times, one at a
 * time, as the spawner starts it (own process group, output to a log file), and prints as JSON the
 * p50 and p99 in milliseconds from just before `spawn` to the time the step wrote: what starting
 * the step's process costs by itself on this machine, without svc.
 */
import { spawn } from "node:child_process";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const runs = Number(process.argv[2] ?? 100);
const runDir = mkdtempSync(join(tmpdir(), "svc-bench-start-"));
const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: tmpdir(), RUN_DIR: runDir };
const wallMs = () => performance.timeOrigin + performance.now();

async function once(): Promise<number> {
  const log = openSync(join(runDir, "setup.log"), "w");
  const before = wallMs();
  const child = spawn("sh", ["-c", 'date +%s%N > "$RUN_DIR/started"'], {
    cwd: runDir,
    env,
    detached: true,
    stdio: ["ignore", log, log],
  });
  await new Promise((resolve) => child.on("close", resolve));
  closeSync(log);
  const stamp = readFileSync(join(runDir, "started"), "utf8").trim();
  return Number(BigInt(stamp) / 1000n) / 1000 - before;
}

// warm-up: the first spawns page in sh and date
for (let i = 0; i < 5; i += 1) await once();
const samples: number[] = [];
for (let i = 0; i < runs; i += 1) samples.push(await once());
rmSync(runDir, { recursive: true, force: true });
samples.sort((a, b) => a - b);
const at = (p: number) => samples[Math.min(samples.length - 1, Math.ceil((p / 100) * samples.length) - 1)]!;
process.stdout.write(`${JSON.stringify({ p50: at(50), p99: at(99) })}\n`);
