import type Docker from "dockerode";
import type { ConfigSnapshot, PipelineSandbox, SandboxSettings } from "../../../shared/config/types.ts";
import type { Logger } from "../../../shared/logger.ts";
import { engineLabel, openEngine } from "../../../shared/sandbox/engine.ts";
import { sandboxSettings } from "../../../shared/sandbox/settings.ts";
import type { Workspace } from "../../../shared/workspace-layout.ts";
import { SandboxEngine } from "./container.ts";

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
 * The process engine of a run whose pipeline declares `sandbox`: one container of the run's own,
 * started by the run's first process. A container that could not be started is the engine's
 * failure (sandbox_image_missing, sandbox_engine_unreachable), which the run reports whatever the
 * phase that first needed it made of the failed start.
 */
export function openSandbox(
  run: { config: Readonly<ConfigSnapshot>; logger: Logger; workerId: string },
  sandbox: PipelineSandbox,
  where: { paths: Workspace; invocationId: string },
): SandboxEngine {
  const settings = sandboxSettings(run.config);
  return new SandboxEngine({
    docker: dockerFor(settings),
    settings,
    sandbox,
    configDir: run.config.dir,
    ...where,
    workerId: run.workerId,
    logger: run.logger,
  });
}
