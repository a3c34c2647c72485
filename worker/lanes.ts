import type { ConfigSnapshot, Pipeline, Target } from "../shared/config/types.ts";
import { laneQueue } from "../shared/queues.ts";
import type { CredentialCooldowns } from "./credentials/cooldowns.ts";
import type { CredentialSecrets } from "./credentials/secrets.ts";

/** Pipelines without targets run their setup steps only, on a lane no credential can stop. */
export const LOCAL_LANE = "svc-lane-local";

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
 * The lane an invocation waits on: its pipeline's first usable target, else its first target
 * (whose lane is stopped, so the job waits there until a credential comes back). `usable`: the
 * lane can run now.
 */
export function laneFor(
  pipeline: Pipeline,
  config: Pick<ConfigSnapshot, "targets">,
  cooldowns: CredentialCooldowns,
  secrets: CredentialSecrets,
): { queue: string; target: string | null; usable: boolean } {
  const targets = pipeline.targets.map((name) => config.targets[name]).filter((t) => t !== undefined);
  if (targets.length === 0) return { queue: LOCAL_LANE, target: null, usable: true };
  const usable = targets.find((target) => targetUsable(target, cooldowns, secrets));
  const chosen = usable ?? targets[0]!;
  return { queue: laneQueue(chosen.name), target: chosen.name, usable: usable !== undefined };
}
