/**
 * A worker's run slots (`worker.concurrency`). The claim loop takes a slot for every job it may
 * claim; a slot is given back either by `release()` (nothing was claimed for it) or by the run it
 * was handed to, in a `finally`, however that run ends. A throw anywhere, before or during a
 * run, gives the slot back: none is ever lost for the life of the process.
 */
export class Slots {
  readonly size: number;
  #free: number;
  readonly #running = new Set<Promise<void>>();
  readonly #onFree: () => void;

  /** `onFree`: called whenever a slot comes back, so the claim loop can look for work */
  constructor(size: number, onFree: () => void = () => {}) {
    this.size = Math.max(1, size);
    this.#free = this.size;
    this.#onFree = onFree;
  }

  get free(): number {
    return this.#free;
  }

  /** runs started with run() that have not ended yet */
  get running(): number {
    return this.#running.size;
  }

  /** Takes up to `max` free slots (none while every slot is busy). */
  take(max: number): Slot[] {
    const count = Math.max(0, Math.min(max, this.#free));
    this.#free -= count;
    return Array.from({ length: count }, () => new Slot(() => this.#giveBack()));
  }

  /**
   * Runs `work` on `slot`: the slot stays taken while it runs and comes back when it ends, thrown
   * error or not. `onError` hears what it threw (the worker logs it); the run itself never rejects.
   */
  run(slot: Slot, work: () => Promise<void>, onError: (error: unknown) => void): void {
    const giveBack = slot.handOver();
    const running: Promise<void> = (async () => {
      try {
        await work();
      } catch (error) {
        onError(error);
      } finally {
        giveBack();
      }
    })();
    this.#running.add(running);
    void running.then(() => this.#running.delete(running));
  }

  /** Settles once every run started so far has ended. */
  async idle(): Promise<void> {
    while (this.#running.size > 0) await Promise.allSettled([...this.#running]);
  }

  /** Settles when every run has ended or `ms` have passed, whichever comes first. */
  async idleWithin(ms: number): Promise<void> {
    if (this.#running.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.idle(), new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
    clearTimeout(timer);
  }

  #giveBack() {
    this.#free += 1;
    this.#onFree();
  }
}

/** One slot, held until released or handed to a run. Releasing twice releases once. */
export class Slot {
  #state: "held" | "handed" | "released" = "held";
  readonly #giveBack: () => void;

  constructor(giveBack: () => void) {
    this.#giveBack = giveBack;
  }

  /** gives the slot back unless a run owns it now (then the run gives it back when it ends) */
  release(): void {
    if (this.#state !== "held") return;
    this.#state = "released";
    this.#giveBack();
  }

  /** the run takes the slot over; what it gets back gives the slot back, once */
  handOver(): () => void {
    if (this.#state !== "held") throw new Error(`a ${this.#state} slot cannot be handed to a run`);
    this.#state = "handed";
    return () => {
      if (this.#state !== "handed") return;
      this.#state = "released";
      this.#giveBack();
    };
  }
}
