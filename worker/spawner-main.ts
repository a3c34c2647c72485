/**
 * The worker's spawner process (see spawner.ts). It starts every setup step and agent of its worker
 * and kills their process groups when the worker is gone. It runs argv vectors exactly as given
 * (no shell text is generated here), and is kept small on purpose: forking from a small process is
 * cheap, forking from the worker's large heap is not.
 */
import { spawn } from "node:child_process";
import { createWriteStream } from "node:fs";
import type { SpawnReply, SpawnRequest } from "./spawner.ts";

const groups = new Set<number>();

const send = (reply: SpawnReply) => {
  if (process.connected) process.send?.(reply);
};

function killGroup(pgid: number) {
  try {
    process.kill(-pgid, "SIGKILL");
  } catch {
    // the group is already gone: nothing left to kill
  }
}

function run(request: Extract<SpawnRequest, { type: "spawn" }>) {
  const { id, spec } = request;
  const log = createWriteStream(spec.logFile, { flags: spec.truncate ? "w" : "a" });
  // a log that cannot be written must not end the spawner; the child's exit is still reported
  log.on("error", () => {});
  let stdout = "";
  let settled = false;
  const [file, ...args] = spec.argv;
  const child = spawn(file!, args, {
    cwd: spec.cwd,
    env: spec.env,
    detached: true,
    stdio: [spec.stdin === undefined ? "ignore" : "pipe", "pipe", "pipe"],
  });
  if (child.pid !== undefined) {
    groups.add(child.pid);
    send({ type: "started", id, pid: child.pid });
  }
  const finish = (exitCode: number | null, signal: NodeJS.Signals | null, spawnError?: string) => {
    if (settled) return;
    settled = true;
    if (child.pid !== undefined) groups.delete(child.pid);
    log.end(() =>
      send({ type: "exit", id, exitCode, signal, stdout, ...(spawnError ? { spawnError } : {}) }),
    );
  };
  child.stdout!.on("data", (chunk: Buffer) => {
    if (spec.captureStdout) stdout += chunk.toString("utf8");
    log.write(chunk);
  });
  child.stderr!.on("data", (chunk: Buffer) => log.write(chunk));
  if (child.stdin) {
    child.stdin.on("error", () => {}); // an agent that never reads its stdin closes the pipe early
    child.stdin.end(spec.stdin);
  }
  child.on("error", (error) => finish(null, null, error.message));
  child.on("close", (exitCode, signal) => finish(exitCode, signal));
}

process.on("message", (request: SpawnRequest) => {
  if (request.type === "spawn") run(request);
  else if (request.type === "kill") killGroup(request.pgid);
});
// the IPC channel closes when the worker process is gone, however it went (SIGKILL included)
process.on("disconnect", () => {
  for (const pgid of groups) killGroup(pgid);
  process.exit(0);
});
// a terminal's Ctrl-C reaches the whole foreground group: the spawner goes only with its worker
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(signal, () => {});
send({ type: "ready" });
