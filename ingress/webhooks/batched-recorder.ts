import type pg from "pg";
import type { PgBoss } from "pg-boss";
import { recordTriggers } from "../../db/record-trigger.ts";
import { isConnectionError } from "../../db/transaction.ts";
import type { NewTrigger } from "../../db/triggers.ts";

/**
 * Transactions of deliveries open at once; more deliveries wait for one of them and go in the next.
 * Batches grow as commits slow down, so more transactions in flight only add commits: on the 2-core
 * machine of `npm run bench -- ingress`, 2 accepted 4,462 deliveries/s, 4 accepted 3,758/s and 8
 * accepted 3,015/s.
 */
const IN_FLIGHT = 2;
/** Deliveries in one transaction at most. */
const MAX_BATCH = 64;

interface Waiting {
  trigger: NewTrigger;
  resolve(recorded: { id: string; created: boolean }): void;
  reject(error: unknown): void;
}

/**
 * Group commit for webhook deliveries. A delivery is stored at once when fewer than IN_FLIGHT
 * transactions are open; under a burst, the deliveries that arrive while they are all open are
 * stored together in the next one (recordTriggers: one commit for all of them). Each delivery is
 * still answered only after its own trigger and job have committed.
 *
 * A batch that a statement error fails (a payload Postgres cannot store, say) is stored again one
 * delivery at a time, so only the delivery at fault gets the error. A batch that lost its
 * connection is not: the commit may have happened, and storing again would store twice; each of its
 * deliveries gets the error (a 503, which the sender retries, and a delivery id makes that safe).
 */
export class BatchedRecorder {
  readonly #pool: pg.Pool;
  readonly #boss: PgBoss;
  readonly #waiting: Waiting[] = [];
  #inFlight = 0;

  constructor(pool: pg.Pool, boss: PgBoss) {
    this.#pool = pool;
    this.#boss = boss;
  }

  record(trigger: NewTrigger): Promise<{ id: string; created: boolean }> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ trigger, resolve, reject });
      this.#next();
    });
  }

  #next(): void {
    while (this.#inFlight < IN_FLIGHT && this.#waiting.length > 0) {
      const batch = this.#waiting.splice(0, MAX_BATCH);
      this.#inFlight += 1;
      void this.#store(batch).finally(() => {
        this.#inFlight -= 1;
        this.#next();
      });
    }
  }

  async #store(batch: Waiting[]): Promise<void> {
    try {
      const triggers = batch.map((waiting) => waiting.trigger);
      const recorded = await recordTriggers(this.#pool, this.#boss, triggers);
      for (const [index, waiting] of batch.entries()) waiting.resolve(recorded[index]!);
    } catch (error) {
      if (batch.length === 1 || isConnectionError(error)) {
        for (const waiting of batch) waiting.reject(error);
        return;
      }
      await Promise.all(batch.map((waiting) => this.#store([waiting])));
    }
  }
}
