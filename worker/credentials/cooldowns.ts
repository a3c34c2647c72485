import type pg from "pg";
import {
  clearCooling,
  dropDeadOlderThan,
  listCooldowns,
  markCooling,
  markDead,
} from "../../db/credential-cooldowns.ts";
import type { Logger } from "../../shared/logger.ts";

export type CredentialState =
  | { state: "usable" }
  | { state: "cooling"; until: Date; reason: string }
  | { state: "dead"; deadAt: Date; reason: string };

/** Dead rows older than this are dropped at start-up: the operator had a month to notice. */
export const DEAD_ROW_RETENTION_DAYS = 30;

function key(target: string, credential: string): string {
  return `${target}\u0000${credential}`;
}

/**
 * The credential state machine of the contract. The in-memory map is seeded from
 * `credential_cooldowns` once, at start-up; afterwards every transition is written through to the
 * table but the table is never re-read, so an operator's row deletion takes effect at the next
 * restart and not before. Dead is terminal for the life of the process: nothing here moves a dead
 * credential anywhere, and it is never offered for use or for a probe.
 */
export class CredentialCooldowns {
  readonly #db: pg.Pool;
  readonly #logger: Logger;
  readonly #states = new Map<string, CredentialState>();
  readonly #listeners = new Set<(target: string) => void>();

  private constructor(db: pg.Pool, logger: Logger) {
    this.#db = db;
    this.#logger = logger;
  }

  static async load(db: pg.Pool, logger: Logger): Promise<CredentialCooldowns> {
    const cooldowns = new CredentialCooldowns(db, logger);
    for (const row of await dropDeadOlderThan(db, DEAD_ROW_RETENTION_DAYS)) {
      logger.info("dead credential row dropped after retention", {
        event: "credential.dead_row_dropped",
        target: row.target,
        credential: row.credential,
        dead_at: row.dead_at?.toISOString(),
      });
    }
    for (const row of await listCooldowns(db)) {
      cooldowns.#states.set(
        key(row.target, row.credential),
        row.state === "dead"
          ? { state: "dead", deadAt: row.dead_at ?? row.updated_at, reason: row.reason }
          : { state: "cooling", until: row.until ?? new Date(0), reason: row.reason },
      );
    }
    return cooldowns;
  }

  /** Called with the target name whenever one of its credentials changes state. */
  onChange(listener: (target: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  state(target: string, credential: string): CredentialState {
    return this.#states.get(key(target, credential)) ?? { state: "usable" };
  }

  isUsable(target: string, credential: string): boolean {
    return this.state(target, credential).state === "usable";
  }

  /** Cooling credentials whose cap should have lifted: candidates for a throttled probe. */
  dueForProbe(now = new Date()): { target: string; credential: string }[] {
    const due: { target: string; credential: string }[] = [];
    for (const [id, state] of this.#states) {
      if (state.state !== "cooling" || state.until > now) continue;
      const [target, credential] = id.split("\u0000") as [string, string];
      due.push({ target, credential });
    }
    return due;
  }

  /** The earliest moment a cooling credential of these may be usable again. */
  earliestUntil(target: string, credentials: string[]): Date | undefined {
    let earliest: Date | undefined;
    for (const credential of credentials) {
      const state = this.state(target, credential);
      if (state.state === "cooling" && (!earliest || state.until < earliest)) earliest = state.until;
    }
    return earliest;
  }

  async markDead(target: string, credential: string, reason: string): Promise<void> {
    const current = this.state(target, credential);
    if (current.state === "dead") return;
    await markDead(this.#db, { target, credential, reason });
    this.#states.set(key(target, credential), { state: "dead", deadAt: new Date(), reason });
    this.#logger.error(
      `credential dead: ${target}/${credential} (${reason}); replace the secret, delete its row from credential_cooldowns and restart`,
      {
        event: "credential.dead",
        target,
        credential,
        reason,
      },
    );
    this.#emit(target);
  }

  async markCooling(target: string, credential: string, until: Date, reason: string): Promise<void> {
    if (this.state(target, credential).state === "dead") return;
    await markCooling(this.#db, { target, credential, until, reason });
    this.#states.set(key(target, credential), { state: "cooling", until, reason });
    this.#logger.warn(
      `credential cooling: ${target}/${credential} until ${until.toISOString()} (${reason})`,
      {
        event: "credential.cooling",
        target,
        credential,
        until: until.toISOString(),
        reason,
      },
    );
    this.#emit(target);
  }

  /** A probe or a request got through: a cooling credential is usable again. Dead stays dead. */
  async markUsable(target: string, credential: string): Promise<void> {
    if (this.state(target, credential).state !== "cooling") return;
    await clearCooling(this.#db, target, credential);
    this.#states.delete(key(target, credential));
    this.#logger.info(`credential usable again: ${target}/${credential}`, {
      event: "credential.usable",
      target,
      credential,
    });
    this.#emit(target);
  }

  #emit(target: string): void {
    for (const listener of this.#listeners) listener(target);
  }
}
