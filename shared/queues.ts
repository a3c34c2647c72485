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
 * LOCAL_LANE. The ingress (submit, reconcile) and the worker (dispatch, release, reaper) all pick
 * lanes through this one function.
 */
export function laneQueue(target: string | null): string {
  return target === null ? LOCAL_LANE : `svc-lane-${target}`;
}

export interface DispatchJob {
  triggerId: string;
}

export interface InvocationJob {
  invocationId: string;
}
