import type Docker from "dockerode";
import type pg from "pg";
import { runningInvocationWorkers } from "../../../db/invocations.ts";
import { runningTaskWorkers } from "../../../db/orchestrated-tasks.ts";
import type { Queryable } from "../../../db/queryable.ts";
import type { ConfigSnapshot } from "../../../shared/config/types.ts";
import { engineStatus } from "../../../shared/sandbox/engine.ts";
import { sandboxSettings } from "../../../shared/sandbox/settings.ts";
import { dockerFor } from "./engine.ts";
import { FORWARDER_LABEL } from "./forwarder.ts";
import { LABELS } from "./options.ts";

/**
 * Removes the sandbox containers no run owns any more, found by their `svc.invocation` label: the
 * invocation is no longer running, or it runs on another worker than the one that started the
 * container (the reaper handed it over after that worker died). An orchestrated task's container
 * (`svc.task`) is judged by its task instead: a task may run on another worker than its
 * invocation's orchestrator. Any worker may sweep; a container of a live run or task always has
 * its invocation or task `running` under its own worker. Then the forwarders (forwarder.ts) whose
 * agent container is not running any more. Returns how many it removed.
 */
export async function sweepSandboxContainers(
  pool: pg.Pool,
  config: Readonly<Pick<ConfigSnapshot, "sandboxes">>,
): Promise<number> {
  const docker = dockerFor(sandboxSettings(config));
  const containers = await docker.listContainers({ all: true, filters: { label: [LABELS.invocation] } });
  const stale = containers.length > 0 ? await unowned(pool, containers) : [];
  let removed = 0;
  const remove = async (id: string) => {
    try {
      await docker.getContainer(id).remove({ force: true, v: true });
      removed++;
    } catch (error) {
      // removed meanwhile by its own run's end, or already being removed: nothing left to do
      if (engineStatus(error) !== 404 && engineStatus(error) !== 409) throw error;
    }
  };
  for (const container of stale) await remove(container.Id);
  // a forwarder dies with its agent's PID namespace and the engine removes it then; what is left
  // is one created but never started (its worker died in between)
  const forwarders = await docker.listContainers({ all: true, filters: { label: [FORWARDER_LABEL] } });
  for (const forwarder of forwarders)
    if (!(await running(docker, forwarder.Labels[FORWARDER_LABEL]!))) await remove(forwarder.Id);
  return removed;
}

async function running(docker: Docker, id: string): Promise<boolean> {
  try {
    return (await docker.getContainer(id).inspect()).State.Running;
  } catch (error) {
    if (engineStatus(error) === 404) return false;
    throw error;
  }
}

/** A labelled container as the engine lists it. */
export interface LabelledContainer {
  Id: string;
  Labels: Record<string, string>;
}

/** The containers whose task (or, without `svc.task`, invocation) is not `running` under their `svc.worker`. */
export async function unowned<T extends LabelledContainer>(db: Queryable, containers: T[]): Promise<T[]> {
  const taskOf = (container: T) => container.Labels[LABELS.task];
  const tasks = containers.map(taskOf).filter((task) => task !== undefined);
  const invocations = containers
    .filter((c) => taskOf(c) === undefined)
    .map((c) => c.Labels[LABELS.invocation]!);
  const [taskOwners, invocationOwners] = await Promise.all([
    tasks.length > 0 ? runningTaskWorkers(db, tasks) : new Map<string, string>(),
    invocations.length > 0 ? runningInvocationWorkers(db, invocations) : new Map<string, string>(),
  ]);
  return containers.filter((container) => {
    const task = taskOf(container);
    const owner =
      task === undefined ? invocationOwners.get(container.Labels[LABELS.invocation]!) : taskOwners.get(task);
    return owner !== container.Labels[LABELS.worker];
  });
}
