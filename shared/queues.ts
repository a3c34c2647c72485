/**
 * pg-boss queue names shared by the ingress (producer) and the worker (consumer).
 * The two processes share nothing but Postgres, so these names are the contract between them.
 */
export const DISPATCH_QUEUE = "svc-dispatch";

/** Pipelines without targets run their setup steps only, on a lane no credential can stop. */
export const LOCAL_LANE = "svc-lane-local";

/**
 * The lane queue an invocation naming `target` waits on: one lane per target, so a target whose
 * only credential is dead stops without blocking others; an invocation without a target waits on
 * LOCAL_LANE. A shadow run (a pipeline's candidate version) waits on its target's shadow lane, which
 * a worker fetches only after the live lanes and the dispatch queue (worker/queue/claim-loop.ts), so
 * it never goes before a live run. The ingress (submit, reconcile) and the worker (dispatch,
 * release, reaper) all pick lanes through this one function.
 */
export function laneQueue(target: string | null, shadow = false): string {
  const lane = target === null ? LOCAL_LANE : `svc-lane-${target}`;
  return shadow ? `${lane}${SHADOW_SUFFIX}` : lane;
}

/** A shadow lane's name ends so (pg-boss allows `/` in queue names; target names are plain words). */
const SHADOW_SUFFIX = "/shadow";

export function isShadowLane(queue: string): boolean {
  return queue.endsWith(SHADOW_SUFFIX);
}

/**
 * The lane a pipeline's new invocation waits on (its agent's targets: invocationTargets): the first
 * target that `usable` accepts, else its
 * first target (whose lane is stopped, so the job waits there until a credential comes back), else
 * the local lane. `usable`: the chosen lane can run now. The worker passes what it knows of
 * credentials (worker/queue/lanes.ts); the ingress, which does not track them, takes every target as usable.
 */
export function pipelineLane<T extends { name: string }>(
  pipeline: RunTargets,
  targets: Readonly<Record<string, T>>,
  usable: (target: T) => boolean = () => true,
): { queue: string; target: string | null; usable: boolean } {
  const configured = invocationTargets(pipeline)
    .map((name) => targets[name])
    .filter((target) => target !== undefined);
  if (configured.length === 0) return { queue: laneQueue(null), target: null, usable: true };
  const first = configured.find(usable);
  const chosen = first ?? configured[0]!;
  return { queue: laneQueue(chosen.name), target: chosen.name, usable: first !== undefined };
}

export interface RunTargets {
  targets: readonly string[];
  orchestrator?: { targets: readonly string[] };
}

/**
 * Where an invocation's agent runs: an orchestrator on `orchestrator.targets` when it names any,
 * else the pipeline's `targets` (where an orchestrator's tasks always run).
 */
export function invocationTargets(pipeline: RunTargets): readonly string[] {
  const own = pipeline.orchestrator?.targets ?? [];
  return own.length > 0 ? own : pipeline.targets;
}

export interface DispatchJob {
  triggerId: string;
}

export interface InvocationJob {
  invocationId: string;
  /**
   * The attempt its claim makes (the invocation's `attempts` once claimed), on a job sent as a lease:
   * the claiming worker keeps it active for the run (worker/queue/run-leases.ts laneLease).
   */
  attempt?: number;
  /**
   * The invocation's concurrency group: the claim takes the group's lock before it claims. A job
   * of a grouped invocation without it claims nothing; the reconcile rule sends one with it.
   */
  group?: string;
}

/** A task an orchestrator created (db/orchestrated-tasks.ts), waiting on a lane like an invocation. */
export interface TaskJob {
  invocationId: string;
  taskId: string;
}

/** What a lane job carries: an invocation to run, or one of an orchestrator's tasks. */
export type LaneJob = InvocationJob | TaskJob;
