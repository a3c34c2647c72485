/**
 * pg-boss queue names shared by the ingress (producer) and the worker (consumer).
 * The two processes share nothing but Postgres, so these names are the contract between them.
 */
export const DISPATCH_QUEUE = "svc-dispatch";

/** One lane per target, so a target whose only credential is dead stops without blocking others. */
export function laneQueue(target: string): string {
  return `svc-lane-${target}`;
}

export interface DispatchJob {
  triggerId: string;
}

export interface InvocationJob {
  invocationId: string;
}
