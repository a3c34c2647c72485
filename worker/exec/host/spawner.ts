import { type ChildProcess, fork } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { typeStrippingExecArgv } from "../../../shared/type-stripping.ts";
import {
  type ChildExit,
  type ChildSpec,
  type ProcessOutcome,
  type ProcessSpec,
  superviseChild,
} from "../process.ts";

/** The spawner gets a ProcessSpec without the worker-side signal and timeout. */
export type SpawnRequest = { type: "spawn"; id: number; spec: ChildSpec } | { type: "kill"; pgid: number };

export type SpawnReply =
  | { type: "ready" }
  | { type: "started"; id: number; pid: number }
  | ({ type: "exit"; id: number } & ChildExit);

const MAIN = join(dirname(fileURLToPath(import.meta.url)), "spawner-main.ts");

interface Pending {
  onStarted: (pid: number) => void;
  onExit: (reply: Extract<SpawnReply, { type: "exit" }>) => void;
}

/**
 * Starts the worker's children from a small helper process, for two reasons:
 * - orphans: children run in their own process groups (so a timeout kills a whole tree), which
 *   also lets them outlive a SIGKILLed worker. The spawner's IPC channel closes whenever the worker
 *   process is gone, however it went, and the spawner then SIGKILLs every group it started that is
 *   still running. It ignores SIGINT/SIGTERM/SIGHUP: it goes only with its worker.
 * - speed: `spawn()` forks the calling process and blocks its event loop until the child has
 *   exec'd; from the worker's large heap that costs several times what it costs from a small
 *   process (measured: 2 ms against 6-16 ms per spawn), and a worker spawns twice per run.
 * The spawner receives argv vectors and environments as data (JSON over IPC) and passes them to
 * `spawn` unchanged: no shell text is ever generated from them.
 */
export class Spawner {
  readonly #child: ChildProcess;
  readonly #pending = new Map<number, Pending>();
  #next = 1;
  #closed = false;
  readonly #exited: Promise<void>;

  private constructor(child: ChildProcess) {
    this.#child = child;
    this.#exited = new Promise((resolve) => child.once("exit", () => resolve()));
    child.on("message", (reply: SpawnReply) => {
      if (reply.type === "started") this.#pending.get(reply.id)?.onStarted(reply.pid);
      else if (reply.type === "exit") {
        const pending = this.#pending.get(reply.id);
        this.#pending.delete(reply.id);
        pending?.onExit(reply);
      }
    });
    child.on("exit", () => {
      this.#closed = true;
      // a spawner that died takes its answers with it: fail what is still waiting
      for (const [, pending] of this.#pending)
        pending.onExit({
          type: "exit",
          id: 0,
          exitCode: null,
          signal: null,
          stdout: "",
          spawnError: "the spawner exited",
        });
      this.#pending.clear();
    });
  }

  static async start(): Promise<Spawner> {
    const child = fork(MAIN, [], {
      // a young generation of 1 MB: a fork copies the spawner's page tables, so its cost follows
      // the spawner's resident memory. With V8's default the young generation grows to 32 MB and
      // the old one keeps growing after it: 92 MB of anonymous memory after 16,000 spawns against
      // 39 MB with this bound, and 0.3 ms more CPU a run over them. The spawner holds almost
      // nothing between spawns, so the smaller young generation costs it no measurable GC time.
      // `--single-threaded`: V8 collects garbage and compiles on the main thread only. The spawner
      // then holds about 4 MB less anonymous memory (33 against 37 MB), and a run's two processes
      // cost it and its children 3.70 ms of CPU against 4.04 ms, the mean of six interleaved pairs
      // of 2,000 runs each (lower in every pair). Its work between two spawns is a few microseconds.
      execArgv: [...typeStrippingExecArgv(), "--max-semi-space-size=1", "--single-threaded"],
      detached: true,
      stdio: ["ignore", "inherit", "inherit", "ipc"],
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
    });
    await new Promise<void>((resolve, reject) => {
      child.once("message", () => resolve());
      child.once("error", reject);
      child.once("exit", (code) => reject(new Error(`the spawner exited with ${code} before it was ready`)));
    });
    child.removeAllListeners("error");
    child.removeAllListeners("exit");
    // after start-up a failed spawner shows as its exit (handled above), which fails what it held
    child.on("error", () => {});
    return new Spawner(child);
  }

  /** false once the spawner process is gone; the host engine then spawns in the worker itself */
  get alive(): boolean {
    return !this.#closed;
  }

  get pid(): number | undefined {
    return this.#child.pid;
  }

  /** the host engine's run, with the fork done by the spawner */
  run(spec: ProcessSpec): Promise<ProcessOutcome> {
    if (this.#closed)
      return Promise.resolve({
        exitCode: null,
        signal: null,
        timedOut: false,
        aborted: false,
        stdout: "",
        spawnError: "the spawner is gone",
      });
    const id = this.#next++;
    let pid: number | undefined;
    let stopping = () => false;
    const kill = () => {
      if (pid !== undefined) this.#send({ type: "kill", pgid: pid });
    };
    const exited = new Promise<ChildExit>((resolve) => {
      this.#pending.set(id, {
        onStarted: (startedPid) => {
          pid = startedPid;
          if (stopping()) kill();
          spec.onStarted?.();
        },
        onExit: ({ type: _type, id: _id, ...exit }) => resolve(exit),
      });
    });
    this.#send({
      type: "spawn",
      id,
      spec: {
        argv: spec.argv,
        cwd: spec.cwd,
        env: spec.env,
        logFile: spec.logFile,
        ...(spec.stdin === undefined ? {} : { stdin: spec.stdin }),
        ...(spec.truncate ? { truncate: true } : {}),
        ...(spec.captureStdout ? { captureStdout: true } : {}),
      },
    });
    const supervised = superviseChild(spec, exited, kill);
    stopping = supervised.stopping;
    return supervised.outcome;
  }

  #send(request: SpawnRequest) {
    if (this.#child.connected) this.#child.send(request);
  }

  /** the worker stops normally: the spawner kills whatever still runs and exits */
  async close(): Promise<void> {
    if (this.#child.connected) this.#child.disconnect();
    await this.#exited;
  }
}
