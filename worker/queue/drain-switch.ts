import type pg from "pg";
import { type DrainState, readDrain } from "../../db/daemon-state.ts";
import type { Logger } from "../../shared/logger.ts";

/**
 * The daemon's drain switch as this worker last read it. It is read off the claim path (at start-up,
 * then by the sweeper every second), so a claim never waits on it.
 */
export class DrainSwitch {
  #state: DrainState | null = null;
  readonly #pool: pg.Pool;
  readonly #logger: Logger;
  readonly #onResume: () => void;

  constructor(pool: pg.Pool, logger: Logger, onResume: () => void) {
    this.#pool = pool;
    this.#logger = logger;
    this.#onResume = onResume;
  }

  get drained(): boolean {
    return this.#state !== null;
  }

  async read(): Promise<void> {
    const value = await readDrain(this.#pool);
    const was = this.#state;
    this.#state = value;
    if (Boolean(value) === Boolean(was)) return;
    if (value) {
      this.#logger.warn("daemon drained: claiming no new work; running work finishes", {
        event: "worker.drained",
        since: value.since,
        by: value.by,
      });
      return;
    }
    this.#logger.info("daemon resumed: claiming work again", { event: "worker.resumed" });
    this.#onResume();
  }
}
