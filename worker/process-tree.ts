import { spawn } from "node:child_process";
import { createWriteStream } from "node:fs";

export interface ProcessSpec {
  /** argv; run without a shell */
  argv: string[];
  cwd: string;
  /** the complete environment of the child: nothing of the worker's is inherited */
  env: Record<string, string>;
  stdin?: string;
  /** file that receives stdout and stderr in arrival order */
  logFile: string;
  /** start the log file empty instead of appending to it */
  truncate?: boolean;
  /** keep stdout in memory as well (the command runtime reads its result from it) */
  captureStdout?: boolean;
  timeoutMs?: number;
  signal?: AbortSignal;
  /** starts the child from the worker's spawner process (see spawner.ts) instead of this one */
  spawner?: { readonly alive: boolean; run(spec: ProcessSpec): Promise<ProcessOutcome> };
}

export interface ProcessOutcome {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  aborted: boolean;
  stdout: string;
  /** a spawn failure (missing executable, bad cwd) */
  spawnError?: string;
}

/**
 * Runs a child in its own process group so that a timeout or shutdown kills the whole tree:
 * an agent CLI that forked helpers must not leave them running after svc gave up on it.
 */
export function runProcessTree(spec: ProcessSpec): Promise<ProcessOutcome> {
  // a spawner that died (it should not) leaves the worker spawning its children itself
  if (spec.spawner?.alive) return spec.spawner.run(spec);
  return new Promise((resolve) => {
    const log = createWriteStream(spec.logFile, { flags: spec.truncate ? "w" : "a" });
    let stdout = "";
    let timedOut = false;
    let aborted = false;
    let settled = false;
    const [file, ...args] = spec.argv;
    const child = spawn(file!, args, {
      cwd: spec.cwd,
      env: spec.env,
      detached: true,
      stdio: [spec.stdin === undefined ? "ignore" : "pipe", "pipe", "pipe"],
    });
    const killTree = () => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // the group is already gone
      }
    };
    const timer =
      spec.timeoutMs !== undefined
        ? setTimeout(() => {
            timedOut = true;
            killTree();
          }, spec.timeoutMs)
        : undefined;
    const onAbort = () => {
      aborted = true;
      killTree();
    };
    if (spec.signal?.aborted) onAbort();
    else spec.signal?.addEventListener("abort", onAbort, { once: true });
    const finish = (outcome: Omit<ProcessOutcome, "stdout" | "timedOut" | "aborted">) => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      spec.signal?.removeEventListener("abort", onAbort);
      // the leader may exit while its children still hold the group: kill the rest either way
      if (timedOut || aborted) killTree();
      log.end(() => resolve({ ...outcome, stdout, timedOut, aborted }));
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
    child.on("error", (error) => finish({ exitCode: null, signal: null, spawnError: error.message }));
    child.on("close", (exitCode, signal) => finish({ exitCode, signal }));
  });
}
