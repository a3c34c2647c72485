/** The first cool-down of a target that stopped answering; each failed probe doubles it. */
export const ENDPOINT_COOLDOWN_FIRST_MS = 5_000;
/** The longest cool-down: a target down for hours is still tried once every five minutes. */
export const ENDPOINT_COOLDOWN_CAP_MS = 300_000;

/** Whether a caller may call the target now, and how it reports what the call found. */
export type EndpointAdmission =
  | {
      kind: "call";
      /** true when this caller is the one probe let through after a cool-down */
      probe: boolean;
      /** the target answered (any HTTP status: it is reachable) */
      up(): void;
      /** a network error or a time-out; returns the cool-down started, if this call started one */
      down(reason: string): { coolingMs: number } | undefined;
      /** no verdict: the caller cut the call short itself (a probe's turn passes to the next caller) */
      release(): void;
    }
  | { kind: "skip"; reason: string };

interface Down {
  /** failed probes since it went down, the first failure included */
  failures: number;
  until: number;
  reason: string;
  /** when the probe let through started, if one is in flight */
  probingSince?: number;
}

/**
 * A probe is a call bounded by its own time-out, so it always settles; one that has not after this
 * long was lost to a bug, and holding its target down for ever would be the worse failure.
 */
const PROBE_LOST_MS = ENDPOINT_COOLDOWN_CAP_MS;

/**
 * Which model targets are down, by target name: a target whose call failed on the network (a name
 * that does not resolve, a refused or reset connection) or timed out is skipped by every caller for
 * a cool-down, 5 s, then 10 s, 20 s... up to 5 min while it stays down. When a cool-down ends,
 * exactly one caller probes it; the others keep skipping it until that probe answers (the target is
 * usable again) or fails (the next, longer cool-down). This is the credential cooldowns' cooling
 * lane for a remote that cannot be reached at all.
 *
 * It lives in process memory, per worker and per ingress, and is never written to the database: it
 * is a cache of a remote's health as this process last saw it, not queue state. A restart forgets
 * it, and the first call after the restart finds out again.
 */
export class EndpointCooldowns {
  readonly #down = new Map<string, Down>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  admit(target: string): EndpointAdmission {
    const down = this.#down.get(target);
    const now = this.#now();
    if (!down) return this.#call(target, false);
    if (now < down.until)
      return {
        kind: "skip",
        reason: `down (${down.reason}); next try in ${Math.ceil((down.until - now) / 1000)} s`,
      };
    if (down.probingSince !== undefined && now - down.probingSince < PROBE_LOST_MS)
      return { kind: "skip", reason: `down (${down.reason}); another call is probing it` };
    down.probingSince = now;
    return this.#call(target, true);
  }

  /** Whether the target is skipped now (cooling, or its probe is in flight). */
  isDown(target: string): boolean {
    const down = this.#down.get(target);
    return down !== undefined && (this.#now() < down.until || down.probingSince !== undefined);
  }

  #call(target: string, probe: boolean): EndpointAdmission {
    let settled = false;
    return {
      kind: "call",
      probe,
      up: () => {
        if (settled) return;
        settled = true;
        this.#down.delete(target);
      },
      down: (reason) => {
        if (settled) return undefined;
        settled = true;
        const current = this.#down.get(target);
        // a call let in before the target went down changes nothing while it cools or is probed:
        // only the probe's failure lengthens the cool-down
        if (current && !probe) return undefined;
        const failures = (current?.failures ?? 0) + 1;
        const coolingMs = Math.min(
          ENDPOINT_COOLDOWN_FIRST_MS * 2 ** (failures - 1),
          ENDPOINT_COOLDOWN_CAP_MS,
        );
        this.#down.set(target, { failures, until: this.#now() + coolingMs, reason });
        return { coolingMs };
      },
      release: () => {
        if (settled) return;
        settled = true;
        const current = this.#down.get(target);
        if (probe && current) current.probingSince = undefined;
      },
    };
  }
}

/** This process's view of its model targets, shared by the query rewrite and /ask. */
export const modelEndpoints = new EndpointCooldowns();
