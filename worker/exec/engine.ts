import type { Diagnostic } from "../../shared/diagnostics.ts";
import type { ProcessOutcome, ProcessSpec } from "./process.ts";

/**
 * Where a run's processes run: on the worker's host (exec/host) or in a container of the run's own
 * (exec/sandbox). A run picks its engines once, before its first process (RunEngines), and hands
 * one to its setup steps and one to its agent's runtime; nothing below that choice knows which
 * engine it was given.
 */
export interface ProcessEngine {
  /** Runs one process to its end. Its timeout and signal kill every process it started. */
  run(spec: ProcessSpec): Promise<ProcessOutcome>;
  /** Why the engine could run none of the run's processes (a container that never started): the run's diagnostic. */
  failure(): Diagnostic | undefined;
  /** The daemon's address as the engine's processes reach it, given the worker's own. */
  daemonUrl(workerUrl: string | undefined): string | undefined;
  /**
   * The worker's model gateway (worker/gateway/) as the engine's processes reach it, given its
   * loopback address. Absent: that same address (a host process reaches it). A sandbox's agent
   * reaches it through a forwarder on the container's own loopback (exec/sandbox/forwarder.ts).
   */
  modelGatewayUrl?(workerUrl: string): string;
  /** Ends what the engine holds for the run; it never rejects (a failure is the engine's to log). */
  close(): Promise<void>;
}

/**
 * The engine of each phase of a run: the host's for both, or a sandbox's two containers (the setup
 * steps' removed, with whatever they left running, before the agent's starts).
 */
export interface RunEngines {
  setup: ProcessEngine;
  agent: ProcessEngine;
}
