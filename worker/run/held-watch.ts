import { setTimeout as sleep } from "node:timers/promises";
import { type Instant, instant, NEVER, within } from "../queue/run-leases.ts";

/** What a worker holding a row (an invocation, an orchestrated task) watches while it runs it. */
export interface HeldWatch {
  /** fires on shutdown, on a cancellation, and when the claim is lost */
  signal: AbortSignal;
  cancelled(): boolean;
  claimLost(): boolean;
  /**
   * A heartbeat now, unless one recently enough proves the claim: false (and aborted) when lost.
   * While the database does not answer it asks again every heartbeat, until it does or the worker
   * shuts down (false: unproven); it never throws.
   */
  stillHeld(): Promise<boolean>;
  stop(): void;
}

export interface HeldRow {
  shutdown: AbortSignal;
  heartbeatMs: number;
  /** proves this worker alive; false when it no longer holds the row */
  heartbeat(): Promise<boolean>;
  /**
   * How long after a heartbeat began the claim is certainly still held (nobody can have taken it
   * sooner), and when the claim was last proved before the watch began. Without them every
   * `stillHeld` asks the database.
   */
  heldForMs?: number;
  renewedAt?: Instant;
  /** the row left `running` under us: was it cancelled (else another worker took it over)? */
  isCancelled(): Promise<boolean>;
  /** makes `cancel` reachable by the cancel channel; `unregister` when the run ends */
  register(cancel: () => void): void;
  unregister(): void;
  onCancel(): void;
  onClaimLost(): void;
}

/**
 * The abort signal and heartbeat of a held row: the signal fires on shutdown, on a cancellation
 * (heard on a cancel channel, or found by the heartbeat), and when the claim is lost.
 */
export function watchHeld(row: HeldRow): HeldWatch {
  const controller = new AbortController();
  let claimLost = false;
  let cancelled = false;
  const cancel = () => {
    if (cancelled) return;
    cancelled = true;
    row.onCancel();
    controller.abort();
  };
  row.register(cancel);
  const onShutdown = () => controller.abort();
  row.shutdown.addEventListener("abort", onShutdown, { once: true });
  if (row.shutdown.aborted) controller.abort();
  let renewed = row.renewedAt ?? NEVER;
  const beat = async (): Promise<boolean> => {
    const startedAt = instant();
    const held = await row.heartbeat();
    if (held && !claimLost && !cancelled) renewed = startedAt;
    if (held || claimLost || cancelled) return !claimLost && !cancelled;
    if (await row.isCancelled()) {
      cancel();
      return false;
    }
    claimLost = true;
    row.onClaimLost();
    controller.abort();
    return false;
  };
  // Only the database can say whether the claim is still held. A run that asks while it does not
  // answer (a partition, a Postgres restart) waits for its verdict rather than throwing with its claim
  // unknown: held, the run goes on; lost, it is abandoned, recording and publishing nothing
  const proven = async (): Promise<boolean> => {
    for (;;) {
      try {
        return await beat();
      } catch {
        // unanswered: asked again below, after a heartbeat's pause
      }
      if (claimLost || cancelled || row.shutdown.aborted) return false;
      await sleep(row.heartbeatMs, undefined, { signal: row.shutdown }).catch(() => {});
    }
  };
  const heartbeat = setInterval(() => {
    beat().catch(() => {}); // a failed heartbeat is retried on the next tick; loss is judged in the database
  }, row.heartbeatMs);
  heartbeat.unref();
  return {
    signal: controller.signal,
    cancelled: () => cancelled,
    claimLost: () => claimLost,
    stillHeld: async () => {
      if (claimLost || cancelled) return false;
      return within(renewed, row.heldForMs ?? 0) || proven();
    },
    stop: () => {
      clearInterval(heartbeat);
      row.shutdown.removeEventListener("abort", onShutdown);
      row.unregister();
    },
  };
}
