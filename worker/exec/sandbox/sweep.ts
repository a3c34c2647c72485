import type pg from "pg";
import { runningInvocationWorkers } from "../../../db/invocations.ts";
import type { ConfigSnapshot } from "../../../shared/config/types.ts";
import { engineStatus } from "../../../shared/sandbox/engine.ts";
import { sandboxSettings } from "../../../shared/sandbox/settings.ts";
import { dockerFor } from "./engine.ts";
import { LABELS } from "./options.ts";

/**
 * Removes the sandbox containers no run owns any more, found by their `svc.invocation` label: the
 * invocation is no longer running, or it runs on another worker than the one that started the
 * container (the reaper handed it over after that worker died). Any worker may sweep; a container
 * of a live run always has its invocation `running` under its own worker. Returns how many it removed.
 */
export async function sweepSandboxContainers(
  pool: pg.Pool,
  config: Readonly<Pick<ConfigSnapshot, "sandboxes">>,
): Promise<number> {
  const docker = dockerFor(sandboxSettings(config));
  const containers = await docker.listContainers({ all: true, filters: { label: [LABELS.invocation] } });
  if (containers.length === 0) return 0;
  const owners = await runningInvocationWorkers(
    pool,
    containers.map((container) => container.Labels[LABELS.invocation]!),
  );
  let removed = 0;
  for (const container of containers) {
    const invocation = container.Labels[LABELS.invocation]!;
    if (owners.get(invocation) === container.Labels[LABELS.worker]) continue;
    try {
      await docker.getContainer(container.Id).remove({ force: true, v: true });
      removed++;
    } catch (error) {
      // removed meanwhile by its own run's end, or already being removed: nothing left to do
      if (engineStatus(error) !== 404 && engineStatus(error) !== 409) throw error;
    }
  }
  return removed;
}
