/** What starting a setup step or agent needs, wherever it runs: argv, never shell text. */
export interface ChildSpec {
  argv: string[];
  cwd: string;
  /** the complete environment of the child: nothing of the starting process's is inherited */
  env: Record<string, string>;
  stdin?: string;
  /** receives stdout and stderr */
  logFile: string;
  /** start the log file empty instead of appending to it */
  truncate?: boolean;
  /** keep stdout in memory as well (the command runtime reads its result from it) */
  captureStdout?: boolean;
}

export interface ChildExit {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  /** a spawn failure (missing executable, bad cwd, unwritable log) */
  spawnError?: string;
}

export interface ProcessSpec extends ChildSpec {
  timeoutMs?: number;
  signal?: AbortSignal;
  /**
   * Called once the child's process exists (or at once, by an engine that cannot tell), so what
   * the caller does beside the child waits until the child has its CPU for the start: on a small
   * machine a start shares the cores with whatever runs while it forks. Not called when the
   * child could not be started at all.
   */
  onStarted?: () => void;
}

export interface ProcessOutcome extends ChildExit {
  timedOut: boolean;
  aborted: boolean;
}

/**
 * The worker's side of a started child, wherever it was started: the spec's timeout and abort
 * signal kill its whole tree (`kill`), and the outcome says which of them ended it. An engine that
 * learns the child's pid only after the timeout or signal may have fired (the spawner) asks
 * `stopping()` and kills the tree as soon as it knows it.
 */
export function superviseChild(
  spec: Pick<ProcessSpec, "timeoutMs" | "signal">,
  exited: Promise<ChildExit>,
  kill: () => void,
): { outcome: Promise<ProcessOutcome>; stopping(): boolean } {
  let timedOut = false;
  let aborted = false;
  const timer =
    spec.timeoutMs !== undefined
      ? setTimeout(() => {
          timedOut = true;
          kill();
        }, spec.timeoutMs)
      : undefined;
  const onAbort = () => {
    aborted = true;
    kill();
  };
  if (spec.signal?.aborted) onAbort();
  else spec.signal?.addEventListener("abort", onAbort, { once: true });
  const outcome = exited.then((exit) => {
    if (timer) clearTimeout(timer);
    spec.signal?.removeEventListener("abort", onAbort);
    // the leader may exit while its children still hold the group: kill the rest either way
    if (timedOut || aborted) kill();
    return { ...exit, timedOut, aborted };
  });
  return { outcome, stopping: () => timedOut || aborted };
}
