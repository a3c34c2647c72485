import type Docker from "dockerode";
import type { PipelineSandbox, SandboxSettings } from "../../../shared/config/sandbox-types.ts";
import type { ConfigSnapshot } from "../../../shared/config/types.ts";
import type { Logger } from "../../../shared/logger.ts";
import { engineLabel, openEngine } from "../../../shared/sandbox/engine.ts";
import { sandboxSettings } from "../../../shared/sandbox/settings.ts";
import type { Workspace } from "../../../shared/workspace-layout.ts";
import type { RunEngines } from "../engine.ts";
import { RunSandbox } from "./sandbox.ts";

/** One engine client per engine address for the worker's life: dockerode keeps no connection open between calls. */
const clients = new Map<string, Docker>();

export function dockerFor(settings: SandboxSettings): Docker {
  const key = engineLabel(settings.engine);
  let docker = clients.get(key);
  if (!docker) {
    docker = openEngine(settings.engine);
    clients.set(key, docker);
  }
  return docker;
}

/**
 * The process engines of a run whose pipeline declares `sandbox`: a container for its setup steps
 * and another for its agent (sandbox.ts), each started by its phase's first process. A container
 * that could not be made or started is the engines' failure (sandbox_image_missing,
 * sandbox_engine_unreachable, sandbox_start_failed), which the run reports whatever the phase
 * that first needed it made of the failed start.
 */
export function openSandbox(
  run: {
    config: Readonly<ConfigSnapshot>;
    logger: Logger;
    workerId: string;
    /** the worker's model gateway: its socket is mounted into the agent's container */
    gateway?: { socketPath: string | undefined };
  },
  sandbox: PipelineSandbox,
  /** an orchestrated task's sandbox names its task (options.ts labels it) */
  where: { paths: Workspace; invocationId: string; taskId?: string },
): RunEngines {
  const settings = sandboxSettings(run.config);
  const { setup, agent } = new RunSandbox({
    docker: dockerFor(settings),
    settings,
    sandbox,
    configDir: run.config.dir,
    ...where,
    workerId: run.workerId,
    logger: run.logger,
    ...(run.gateway?.socketPath ? { gatewaySocket: run.gateway.socketPath } : {}),
  });
  return { setup, agent };
}
