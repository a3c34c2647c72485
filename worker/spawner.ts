import { type ChildProcess, fork } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { typeStrippingExecArgv } from "../shared/type-stripping.ts";
import type { ProcessOutcome, ProcessSpec } from "./process-tree.ts";

/** What the spawner needs of a ProcessSpec: everything but the worker-side signal and timeout. */
export type SpawnSpec = Pick<
  ProcessSpec,
  "argv" | "cwd" | "env" | "stdin" | "logFile" | "truncate" | "captureStdout"
>;

export type SpawnRequest =
  /** `gated`: started, but held before it runs anything until "open" (or dropped on "discard") */
  | { type: "spawn"; id: number; spec: SpawnSpec; gated?: boolean }
  | { type: "open"; id: number }
  | { type: "discard"; id: number }
  | { type: "kill"; pgid: number };

export type SpawnReply =
  | { type: "ready" }
  /** `spare`: the child is a spare shell the spawner started before it was asked (see gates.ts) */
  | { type: "started"; id: number; pid: number; spare?: boolean }
  | {
      type: "exit";
      id: number;
      exitCode: number | null;
      signal: NodeJS.Signals | null;
      stdout: string;
      spawnError?: string;
    };

const MAIN = join(dirname(fileURLToPath(import.meta.url)), "spawner-main.ts");

/** What the gate of a prepared child sets or drops: an environment that names one is not prepared. */
export const GATE_VARIABLES: readonly string[] = ["OLDPWD", "svc_gate"];

/**
 * A child started ahead of time and held at a gate (see Spawner.prepare): the fork and exec are
 * paid while the caller still decides whether it may run at all.
 */
export interface PreparedProcess {
  /** still waiting at its gate, ready to be released */
  readonly held: boolean;
  /** lets it run; from here on `signal` and `timeoutMs` apply as they would to `run` */
  release(watch: Pick<ProcessSpec, "signal" | "timeoutMs">): Promise<ProcessOutcome>;
  /** it must never run: its gate closes and its process group is killed; false if it was not held */
  discard(): boolean;
  /** the gate's process is up; `spare` if it was a spare shell, not one forked for this child */
  readonly started: Promise<{ pid: number; spare: boolean }>;
}

interface Pending {
  pid?: number;
  onStarted: (pid: number, spare: boolean) => void;
  onExit: (reply: Extract<SpawnReply, { type: "exit" }>) => void;
}

/**
 * Starts the worker's children from a small helper process, for two reasons:
 * - speed: `spawn()` forks the calling process and blocks its event loop until the child has
 *   exec'd; from the worker's large heap that costs several times what it costs from a small
 *   process (measured: 2 ms against 6-16 ms per spawn), and a worker spawns twice per run;
 * - orphans: children run in their own process groups (so a timeout kills a whole tree), which
 *   also lets them outlive a SIGKILLed worker. The spawner's IPC channel closes whenever the worker
 *   process is gone, however it went, and the spawner then SIGKILLs every group it started that is
 *   still running. It ignores SIGINT/SIGTERM/SIGHUP: it goes only with its worker.
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
      if (reply.type === "started") {
        const pending = this.#pending.get(reply.id);
        if (pending) {
          pending.pid = reply.pid;
          pending.onStarted(reply.pid, reply.spare === true);
        }
      } else if (reply.type === "exit") {
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

  /** `spares`: how many spare gate shells it keeps ready for prepare (default 1) */
  static async start(options: { spares?: number } = {}): Promise<Spawner> {
    const child = fork(MAIN, [], {
      execArgv: typeStrippingExecArgv(),
      detached: true,
      stdio: ["ignore", "inherit", "inherit", "ipc"],
      env: {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        ...(options.spares === undefined ? {} : { SVC_SPAWNER_SPARES: String(options.spares) }),
      },
    });
    await new Promise<void>((resolve, reject) => {
      child.once("message", () => resolve());
      child.once("error", reject);
      child.once("exit", (code) => reject(new Error(`the spawner exited with ${code} before it was ready`)));
    });
    child.removeAllListeners("error");
    child.removeAllListeners("exit");
    child.on("error", () => {});
    return new Spawner(child);
  }

  /** false once the spawner process is gone; runProcessTree then spawns in the worker itself */
  get alive(): boolean {
    return !this.#closed;
  }

  get pid(): number | undefined {
    return this.#child.pid;
  }

  /** runProcessTree's contract, with the fork done by the spawner */
  run(spec: ProcessSpec): Promise<ProcessOutcome> {
    const launch = this.#launch(spec, false);
    launch.watch(spec);
    return launch.outcome;
  }

  /**
   * Starts a child held at a gate: a shell, in the process group the child gets, that waits before
   * it enters the child's directory and execs the child's argv, so a release costs the exec alone.
   * The gate is a spare shell the spawner started ahead of time, when one is there and the
   * environment allows it, else one started now in the child's environment (see gates.ts). The
   * directory need not exist until the release. A discarded child never gets past the gate: the
   * gate is closed, and its group is killed too.
   */
  prepare(spec: SpawnSpec): PreparedProcess | undefined {
    if (GATE_VARIABLES.some((name) => name in spec.env)) return undefined;
    const launch = this.#launch(spec, true);
    let state: "held" | "released" | "discarded" = "held";
    return {
      get held() {
        return state === "held" && !launch.exited;
      },
      release: (watch) => {
        state = "released";
        launch.watch(watch);
        this.#send({ type: "open", id: launch.id });
        return launch.outcome;
      },
      discard: () => {
        if (state !== "held") return false;
        state = "discarded";
        this.#send({ type: "discard", id: launch.id });
        return true;
      },
      started: launch.started,
    };
  }

  #launch(
    spec: SpawnSpec,
    gated: boolean,
  ): {
    id: number;
    outcome: Promise<ProcessOutcome>;
    started: Promise<{ pid: number; spare: boolean }>;
    readonly exited: boolean;
    watch(spec: Pick<ProcessSpec, "signal" | "timeoutMs">): void;
  } {
    const id = this.#next++;
    let timedOut = false;
    let aborted = false;
    let pid: number | undefined;
    let timer: NodeJS.Timeout | undefined;
    let signal: AbortSignal | undefined;
    let exited = false;
    const kill = () => {
      if (pid !== undefined) this.#send({ type: "kill", pgid: pid });
    };
    const onAbort = () => {
      aborted = true;
      kill();
    };
    let reportStarted: (started: { pid: number; spare: boolean }) => void = () => {};
    const started = new Promise<{ pid: number; spare: boolean }>((resolve) => {
      reportStarted = resolve;
    });
    const outcome = new Promise<ProcessOutcome>((resolve) => {
      if (this.#closed) {
        resolve({
          exitCode: null,
          signal: null,
          timedOut: false,
          aborted: false,
          stdout: "",
          spawnError: "the spawner is gone",
        });
        return;
      }
      this.#pending.set(id, {
        onStarted: (startedPid, spare) => {
          pid = startedPid;
          reportStarted({ pid: startedPid, spare });
          if (timedOut || aborted) kill();
        },
        onExit: (reply) => {
          exited = true;
          if (timer) clearTimeout(timer);
          signal?.removeEventListener("abort", onAbort);
          // the leader may exit while its children still hold the group: kill the rest either way
          if (timedOut || aborted) kill();
          resolve({
            exitCode: reply.exitCode,
            signal: reply.signal,
            timedOut,
            aborted,
            stdout: reply.stdout,
            ...(reply.spawnError ? { spawnError: reply.spawnError } : {}),
          });
        },
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
        ...(gated ? { gated: true } : {}),
      });
    });
    const watch = (watched: Pick<ProcessSpec, "signal" | "timeoutMs">) => {
      if (exited) return; // nothing left to watch, and its process group id may be reused
      if (watched.timeoutMs !== undefined)
        timer = setTimeout(() => {
          timedOut = true;
          kill();
        }, watched.timeoutMs);
      signal = watched.signal;
      if (signal?.aborted) onAbort();
      else signal?.addEventListener("abort", onAbort, { once: true });
    };
    return {
      id,
      outcome,
      started,
      get exited() {
        return exited;
      },
      watch,
    };
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
