/**
 * Run by bench/worker.bench.ts as a process of its own, small like the worker's spawner: starts a
 * no-op run's two processes `runs` times (`sh -c true`, then `/bin/echo {}` with a prompt on its
 * stdin), four at a time, as the spawner starts them (own process group, output to a log file), and
 * prints the CPU it and its children used per run, in milliseconds, from /proc.
 */
import { spawn } from "node:child_process";
import { closeSync, openSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cpuMs } from "./proc-cpu.ts";

const runs = Number(process.argv[2] ?? 400);
const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: tmpdir() };
const logFile = join(tmpdir(), `svc-bench-floor-${process.pid}.log`);

function start(argv: string[], stdin?: string): Promise<void> {
  const log = openSync(logFile, "a");
  const child = spawn(argv[0]!, argv.slice(1), {
    env,
    detached: true,
    stdio: [stdin === undefined ? "ignore" : "pipe", stdin === undefined ? log : "pipe", log],
  });
  child.stdin?.on("error", () => {}); // echo does not read its stdin: an early close is expected
  child.stdin?.end(stdin);
  child.stdout?.resume();
  return new Promise((resolve) =>
    child.on("close", () => {
      closeSync(log);
      resolve();
    }),
  );
}

const before = cpuMs("self", { children: true });
let next = 0;
const lane = async () => {
  while (next++ < runs) {
    await start(["sh", "-c", "true"]);
    await start(["/bin/echo", "{}"], "nothing");
  }
};
await Promise.all([lane(), lane(), lane(), lane()]);
const used = cpuMs("self", { children: true }) - before;
rmSync(logFile, { force: true });
process.stdout.write(`${used / runs}\n`);
