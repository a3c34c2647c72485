/**
 * The worker's spawner process (see spawner.ts). It starts every setup step and agent of its worker
 * and kills their process groups when the worker is gone. Kept small on purpose: forking from a
 * small process is cheap, forking from the worker's large heap is not.
 */
import { spawn } from "node:child_process";
import { createWriteStream, type WriteStream } from "node:fs";
import type { Writable } from "node:stream";
import type { SpawnReply, SpawnRequest } from "./spawner.ts";

const groups = new Set<number>();

/** A child held at its gate (see Spawner.prepare): `open` lets it run, `discard` ends it. */
interface Held {
  gate: Writable;
  pid: number | undefined;
  open(): void;
}
const held = new Map<number, Held>();

/**
 * The gate of a held child. It starts in "/" because its workspace may not exist yet, waits for a
 * line on fd 3, then enters the child's directory and execs the child's argv with fd 3 closed:
 * `$0` is /bin/sh as for a direct `sh -c`, and the OLDPWD that `cd` sets is dropped, so the child
 * sees exactly the environment and directory it would have been spawned with (GATE_VARIABLES).
 */
const GATE = 'IFS= read -r svc_gate <&3 && cd -P -- "$1" && unset OLDPWD svc_gate && shift && exec "$@" 3<&-';

const send = (reply: SpawnReply) => {
  if (process.connected) process.send?.(reply);
};

function killGroup(pgid: number) {
  try {
    process.kill(-pgid, "SIGKILL");
  } catch {
    // already gone
  }
}

function run(request: Extract<SpawnRequest, { type: "spawn" }>) {
  const { id, spec, gated } = request;
  // a held child's log directory may not exist yet: its log opens when its gate does
  let log: WriteStream | undefined;
  const openLog = () => {
    log = createWriteStream(spec.logFile, { flags: spec.truncate ? "w" : "a" });
    log.on("error", () => {}); // a log that cannot be written must not end the spawner
  };
  if (!gated) openLog();
  let stdout = "";
  let settled = false;
  const [file, ...args] = gated ? ["/bin/sh", "-c", GATE, "/bin/sh", spec.cwd, ...spec.argv] : spec.argv;
  const child = spawn(file!, args, {
    cwd: gated ? "/" : spec.cwd,
    env: spec.env,
    detached: true,
    stdio: [
      spec.stdin === undefined ? "ignore" : "pipe",
      "pipe",
      "pipe",
      ...(gated ? ["pipe" as const] : []),
    ],
  });
  if (gated) {
    const gate = child.stdio[3] as Writable;
    gate.on("error", () => {});
    held.set(id, { gate, pid: child.pid, open: openLog });
  }
  if (child.pid !== undefined) {
    groups.add(child.pid);
    send({ type: "started", id, pid: child.pid });
  }
  const finish = (exitCode: number | null, signal: NodeJS.Signals | null, spawnError?: string) => {
    if (settled) return;
    settled = true;
    held.get(id)?.gate.destroy();
    held.delete(id);
    if (child.pid !== undefined) groups.delete(child.pid);
    const reply = () =>
      send({ type: "exit", id, exitCode, signal, stdout, ...(spawnError ? { spawnError } : {}) });
    if (log) log.end(reply);
    else reply();
  };
  child.stdout!.on("data", (chunk: Buffer) => {
    if (spec.captureStdout) stdout += chunk.toString("utf8");
    log?.write(chunk);
  });
  child.stderr!.on("data", (chunk: Buffer) => log?.write(chunk));
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
  else if (request.type === "open") {
    const child = held.get(request.id);
    held.delete(request.id);
    child?.open();
    child?.gate.end("\n");
  } else if (request.type === "discard") {
    // the closed gate alone ends the shell before it runs anything; the kill makes sure
    const child = held.get(request.id);
    held.delete(request.id);
    child?.gate.destroy();
    if (child?.pid !== undefined) killGroup(child.pid);
  }
});
// the IPC channel closes when the worker process is gone, however it went (SIGKILL included)
process.on("disconnect", () => {
  for (const pgid of groups) killGroup(pgid);
  process.exit(0);
});
// a terminal's Ctrl-C reaches the whole foreground group: the spawner goes only with its worker
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(signal, () => {});
send({ type: "ready" });
