import type { Logger } from "../../shared/logger.ts";
import type { CoolingProbe } from "../credentials/probe.ts";
import { sweepSandboxContainers } from "../exec/sandbox/sweep.ts";
import type { DrainSwitch } from "./drain-switch.ts";
import { type ReaperDeps, reapStaleInvocations } from "./reaper.ts";
import { sweepWorkspaces } from "./retention.ts";

export interface SweeperDeps extends ReaperDeps {
  drain: DrainSwitch;
  probe: CoolingProbe;
  reapIntervalMs: number;
  /** the throttle of cooling-credential probes (ticks run at least once a second) */
  probeIntervalMs: number;
  sweepIntervalMs: number;
  logger: Logger;
}

/** How often the drain switch is read. */
const DRAIN_CHECK_MS = 1_000;

/**
 * The worker's background duties, off the claim path, each on its own timer: reconcile runs whose
 * worker was lost or whose job is missing (reaper.ts), remove sandbox containers no run owns
 * (sandbox/sweep.ts, only when a pipeline runs sandboxed), read the drain switch, probe cooling
 * credentials, and apply the retention tiers. A failed round is logged and tried again on the next
 * tick. Returns the function that stops them.
 */
export function startSweeper(deps: SweeperDeps): () => void {
  const { logger } = deps;
  const background = (name: string, work: () => Promise<unknown>) => () => {
    work().catch((error) =>
      logger.warn(`${name} failed`, { event: `worker.${name}_failed`, error: (error as Error).message }),
    );
  };
  const sweep = background("sweep", () => sweepWorkspaces(deps.pool, deps.config));
  const timers = [
    setInterval(
      background("reap", () => reapStaleInvocations(deps)),
      deps.reapIntervalMs,
    ),
    setInterval(
      background("drain_check", () => deps.drain.read()),
      DRAIN_CHECK_MS,
    ),
    setInterval(
      background("probe", () => deps.probe.tick()),
      Math.min(deps.probeIntervalMs, 1_000),
    ),
    setInterval(sweep, deps.sweepIntervalMs),
  ];
  if (Object.values(deps.config.pipelines).some((pipeline) => pipeline.sandbox)) {
    const containers = background("sandbox_sweep", () => sweepSandboxContainers(deps.pool, deps.config));
    timers.push(setInterval(containers, deps.reapIntervalMs));
  }
  sweep();
  return () => {
    for (const timer of timers) clearInterval(timer);
  };
}
