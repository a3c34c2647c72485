import type { ProcessEngine } from "../engine.ts";
import type { ProcessOutcome, ProcessSpec } from "../process.ts";
import { superviseChild } from "../process.ts";
import { killGroup, startChild } from "./child-process.ts";
import type { Spawner } from "./spawner.ts";

/**
 * The worker's host as a process engine: each process in its own process group, so a timeout or
 * shutdown kills the whole tree (an agent CLI that forked helpers must not leave them running after
 * svc gave up on it). Processes are started by the worker's spawner (spawner.ts); one that died (it
 * should not) leaves the worker starting them itself, which works, only slower. One engine serves
 * every unsandboxed run of the worker: it holds nothing of a run's.
 */
export class HostEngine implements ProcessEngine {
  readonly #spawner: Spawner | undefined;

  constructor(spawner?: Spawner) {
    this.#spawner = spawner;
  }

  run(spec: ProcessSpec): Promise<ProcessOutcome> {
    if (this.#spawner?.alive) return this.#spawner.run(spec);
    return runHere(spec);
  }

  failure(): undefined {
    return undefined;
  }

  daemonUrl(workerUrl: string | undefined): string | undefined {
    return workerUrl;
  }

  /** A run's processes are gone with their steps; the spawner closes with the worker. */
  async close(): Promise<void> {}
}

/** Starts the process from this process, without a spawner. */
export function runHere(spec: ProcessSpec): Promise<ProcessOutcome> {
  const { pid, exited } = startChild(spec);
  if (pid !== undefined) spec.onStarted?.();
  return superviseChild(spec, exited, () => {
    if (pid !== undefined) killGroup(pid);
  }).outcome;
}
