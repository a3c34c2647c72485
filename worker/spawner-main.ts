/**
 * The worker's spawner process (see spawner.ts). It starts every setup step and agent of its worker
 * and kills their process groups when the worker is gone. Kept small on purpose: forking from a
 * small process is cheap, forking from the worker's large heap is not.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import {
  closeSync,
  constants,
  createWriteStream,
  mkdtempSync,
  openSync,
  rmSync,
  unlinkSync,
  type WriteStream,
  writeSync,
} from "node:fs";
import { Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Writable } from "node:stream";
import { promisify } from "node:util";
import { GATE, RELEASE, SPARE_GATE, SPARE_OPENING, SPARE_RELEASE, sparePrelude } from "./gates.ts";
import type { SpawnReply, SpawnRequest } from "./spawner.ts";

const execFileAsync = promisify(execFile);
const groups = new Set<number>();

/** A child held at its gate (see Spawner.prepare): `open` lets it run, `close` ends the gate. */
interface Held {
  pid: number | undefined;
  open(): void;
  close(): void;
}
const held = new Map<number, Held>();

/** How many spares to keep: the worker's spawner keeps one; 0 turns them off (SVC_SPAWNER_SPARES). */
const SPARES = Math.max(0, Number(process.env.SVC_SPAWNER_SPARES ?? 1) || 0);
/** where spares' FIFOs are made, each unlinked once opened: private to this spawner, removed with it */
const spareDir = SPARES > 0 ? mkdtempSync(join(tmpdir(), "svc-spawner-")) : undefined;
/** a spare shell, and the write end of the FIFO it reads its child from */
interface Spare {
  child: ChildProcess;
  fd: number;
}
const spares: Spare[] = [];
let sparesMade = 0;
let starting = 0;
/**
 * A spare is replaced once the one taken has been released or dropped, and this long after: the
 * fork and exec of the replacement must not slow the first exec of the run it serves.
 */
const REPLENISH_DELAY_MS = 10;
let replenishing: NodeJS.Timeout | undefined;

/**
 * The FIFO is opened read-write here, so neither side waits for the other, and handed to the
 * shell as its fd 3, which it sources (SPARE_GATE). Its first line, written before the shell
 * starts, closes the shell's fd 3: from then on this process holds the FIFO's only write end, and
 * if the spawner dies, however it dies, the spare reads EOF and exits. (Reading that line needs no
 * writer but the shell itself, so there is no moment at which a dead spawner leaves it waiting.)
 */
async function startSpare() {
  sparesMade += 1;
  starting += 1;
  const fifo = join(spareDir!, `spare-${sparesMade}`);
  try {
    await execFileAsync("mkfifo", ["-m", "600", "--", fifo]);
    const fd = openSync(fifo, constants.O_RDWR);
    unlinkSync(fifo);
    writeSync(fd, SPARE_OPENING);
    const child = spawn("/bin/sh", ["-c", SPARE_GATE, "/bin/sh"], {
      cwd: "/",
      env: {},
      detached: true,
      stdio: ["ignore", "pipe", "pipe", fd],
    });
    child.on("error", () => {});
    if (child.pid === undefined) {
      closeSync(fd);
      return;
    }
    groups.add(child.pid);
    const spare = { child, fd };
    // a spare that ends before it is taken (killed from outside, say) is simply replaced
    child.once("exit", () => {
      const index = spares.indexOf(spare);
      if (index < 0) return;
      spares.splice(index, 1);
      groups.delete(child.pid!);
      closeSync(fd);
      replenish();
    });
    spares.push(spare);
  } catch {
    // no spare this time: children get gates of their own until the next replenish
  } finally {
    starting -= 1;
  }
}

function replenish() {
  if (replenishing || spares.length + starting >= SPARES || !process.connected) return;
  replenishing = setTimeout(() => {
    replenishing = undefined;
    for (let missing = SPARES - spares.length - starting; missing > 0; missing -= 1) void startSpare();
  }, REPLENISH_DELAY_MS);
}

/** A spare shell and the write end of its FIFO; none while none is ready. */
function takeSpare(): { child: ChildProcess; gate: Socket } | undefined {
  const spare = spares.shift();
  if (!spare) return undefined;
  const gate = new Socket({ fd: spare.fd, readable: false, writable: true });
  gate.on("error", () => {});
  return { child: spare.child, gate };
}

function removeSpareDir() {
  if (spareDir) rmSync(spareDir, { recursive: true, force: true });
}

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
  const prelude = gated && spec.stdin === undefined ? sparePrelude(spec) : undefined;
  const spare = prelude === undefined ? undefined : takeSpare();
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
  const child =
    spare?.child ??
    spawn(file!, args, {
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
  if (spare) {
    spare.gate.write(prelude!);
    held.set(id, {
      pid: child.pid,
      open: () => {
        openLog();
        spare.gate.end(SPARE_RELEASE);
        replenish();
      },
      close: () => {
        spare.gate.destroy();
        replenish();
      },
    });
  } else if (gated) {
    const gate = child.stdio[3] as Writable;
    gate.on("error", () => {});
    held.set(id, {
      pid: child.pid,
      open: () => {
        openLog();
        gate.end(RELEASE);
      },
      close: () => gate.destroy(),
    });
  }
  if (child.pid !== undefined) {
    groups.add(child.pid);
    send({ type: "started", id, pid: child.pid, ...(spare ? { spare: true } : {}) });
  }
  const finish = (exitCode: number | null, signal: NodeJS.Signals | null, spawnError?: string) => {
    if (settled) return;
    settled = true;
    held.get(id)?.close();
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
  } else if (request.type === "discard") {
    // the closed gate alone ends the shell before it runs anything; the kill makes sure
    const child = held.get(request.id);
    held.delete(request.id);
    child?.close();
    if (child?.pid !== undefined) killGroup(child.pid);
  }
});
// the IPC channel closes when the worker process is gone, however it went (SIGKILL included)
process.on("disconnect", () => {
  for (const pgid of groups) killGroup(pgid);
  removeSpareDir();
  process.exit(0);
});
// a terminal's Ctrl-C reaches the whole foreground group: the spawner goes only with its worker
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(signal, () => {});
for (let spare = 0; spare < SPARES; spare += 1) void startSpare();
send({ type: "ready" });
