import type { PgBoss } from "pg-boss";
import { ensureLaneQueue } from "../../db/boss.ts";
import type { ConfigSnapshot, Pipeline, Target } from "../../shared/config/types.ts";
import type { Logger } from "../../shared/logger.ts";
import { isShadowLane, LOCAL_LANE, laneQueue, pipelineLane } from "../../shared/queues.ts";
import type { CredentialCooldowns } from "../credentials/cooldowns.ts";
import type { CredentialSecrets } from "../credentials/secrets.ts";
import { ensureLeaseQueues } from "./run-leases.ts";

export { LOCAL_LANE };

/** A target can run now: a command target always; an openai target while one credential is usable. */
export function targetUsable(
  target: Target,
  cooldowns: CredentialCooldowns,
  secrets: CredentialSecrets,
): boolean {
  // a command target without credentials needs none; one with credentials needs a usable one
  if (target.runtime === "command" && target.credentials.length === 0) return true;
  return target.credentials.some(
    (credential) =>
      cooldowns.isUsable(target.name, credential.name) &&
      secrets.get(target.name, credential.name) !== undefined,
  );
}

/**
 * The lane a pipeline's new invocation waits on (shared/queues.ts pipelineLane), by this worker's
 * view of credentials; a shadow run (`shadow`) waits on that target's shadow lane.
 */
export function laneFor(
  pipeline: Pipeline,
  config: Pick<ConfigSnapshot, "targets">,
  cooldowns: CredentialCooldowns,
  secrets: CredentialSecrets,
  shadow = false,
): { queue: string; target: string | null; usable: boolean } {
  const lane = pipelineLane(pipeline, config.targets, (target) => targetUsable(target, cooldowns, secrets));
  return shadow ? { ...lane, queue: laneQueue(lane.target, true) } : lane;
}

/**
 * Every lane a worker serves, with the target it runs (null: the local lane): each target's live
 * lane, then each one's shadow lane. Shadow runs have lanes of their own so that they are taken
 * only when no live run waits: the claim loop fetches them after the live lanes and the dispatch
 * queue (claim-loop.ts), and pg-boss's fetch cannot put one job of a queue after another queue's.
 */
export function laneTargets(config: Pick<ConfigSnapshot, "targets">): Map<string, string | null> {
  const lanes = new Map<string, string | null>([[LOCAL_LANE, null]]);
  for (const target of Object.values(config.targets)) lanes.set(laneQueue(target.name), target.name);
  lanes.set(laneQueue(null, true), null);
  for (const target of Object.values(config.targets)) lanes.set(laneQueue(target.name, true), target.name);
  return lanes;
}

/** The lanes of `usable` in the order a claim round fetches them: live ones, then `then`, then shadow ones. */
export function claimOrder(usable: readonly string[], then: string): string[] {
  return [...usable.filter((lane) => !isShadowLane(lane)), then, ...usable.filter(isShadowLane)];
}

/**
 * The queues a worker needs before it dispatches or claims: the lease queues (the lost-lease queue
 * is also the dead letter of every lane job sent as a lease) and every lane it serves, which it
 * returns with their targets.
 */
export async function ensureWorkerQueues(
  boss: PgBoss,
  config: Pick<ConfigSnapshot, "targets">,
): Promise<Map<string, string | null>> {
  await ensureLeaseQueues(boss, config.targets);
  const lanes = laneTargets(config);
  for (const lane of lanes.keys()) await ensureLaneQueue(boss, lane, config.targets);
  return lanes;
}

interface LaneStateDeps {
  config: Pick<ConfigSnapshot, "targets">;
  cooldowns: CredentialCooldowns;
  secrets: CredentialSecrets;
  logger: Logger;
}

/**
 * Logs `lane.started` / `lane.stopped` whenever a lane's target becomes usable or stops being so
 * (a credential cooled down or came back); the first update logs every lane's state.
 */
export class LaneStates {
  readonly #known = new Map<string, boolean>();
  readonly #lanes: ReadonlyMap<string, string | null>;
  readonly #deps: LaneStateDeps;

  constructor(lanes: ReadonlyMap<string, string | null>, deps: LaneStateDeps) {
    this.#lanes = lanes;
    this.#deps = deps;
  }

  update(): void {
    const { config, cooldowns, secrets, logger } = this.#deps;
    for (const [lane, name] of this.#lanes) {
      // a shadow lane stops and starts with its target's live lane: logged once, for that one
      if (isShadowLane(lane)) continue;
      const target = name ? config.targets[name] : undefined;
      const usable = !target || targetUsable(target, cooldowns, secrets);
      if (usable === this.#known.get(lane)) continue;
      this.#known.set(lane, usable);
      if (usable) logger.info("lane working", { event: "lane.started", lane });
      else
        logger.warn("lane stopped: its target has no usable credential; its jobs wait", {
          event: "lane.stopped",
          lane,
        });
    }
  }

  usable(): string[] {
    return [...this.#known].filter(([, usable]) => usable).map(([lane]) => lane);
  }
}
