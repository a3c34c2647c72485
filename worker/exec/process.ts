import { type ChildExit, type ChildSpec, killGroup, startChild } from "./host/child-process.ts";

export interface ProcessSpec extends ChildSpec {
  timeoutMs?: number;
  signal?: AbortSignal;
  /** starts the child from the worker's spawner process (see spawner.ts) instead of this one */
  spawner?: { readonly alive: boolean; run(spec: ProcessSpec): Promise<ProcessOutcome> };
  /**
   * Called once the child's process exists (or at once, by a starter that cannot tell), so what
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
 * Runs a child in its own process group so that a timeout or shutdown kills the whole tree:
 * an agent CLI that forked helpers must not leave them running after svc gave up on it.
 */
export function runProcessTree(spec: ProcessSpec): Promise<ProcessOutcome> {
  // a spawner that died (it should not) leaves the worker spawning its children itself
  if (spec.spawner?.alive) return spec.spawner.run(spec);
  const { pid, exited } = startChild(spec);
  if (pid !== undefined) spec.onStarted?.();
  return superviseChild(spec, exited, () => {
    if (pid !== undefined) killGroup(pid);
  }).outcome;
}

/**
 * The worker's side of a started child, wherever it was started: the spec's timeout and abort
 * signal kill its process group (`kill`), and the outcome says which of them ended it. A spawner
 * learns the child's pid only after the timeout or signal may have fired: `stopping()` tells it
 * to kill the group as soon as it knows it.
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
