import { type ChildExit, type ChildSpec, killGroup, startChild } from "./child-process.ts";

export interface ProcessSpec extends ChildSpec {
  timeoutMs?: number;
  signal?: AbortSignal;
  /** starts the child from the worker's spawner process (see spawner.ts) instead of this one */
  spawner?: { readonly alive: boolean; run(spec: ProcessSpec): Promise<ProcessOutcome> };
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
  let timedOut = false;
  let aborted = false;
  const killTree = () => {
    if (pid !== undefined) killGroup(pid);
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
  return exited.then((exit) => {
    if (timer) clearTimeout(timer);
    spec.signal?.removeEventListener("abort", onAbort);
    // the leader may exit while its children still hold the group: kill the rest either way
    if (timedOut || aborted) killTree();
    return { ...exit, timedOut, aborted };
  });
}
