import type Docker from "dockerode";
import type { SandboxSettings } from "../../../shared/config/types.ts";
import { engineLabel, openEngine } from "../../../shared/sandbox/engine.ts";
import { sandboxSettings } from "../../../shared/sandbox/settings.ts";
import type { ExecuteDeps } from "../../run/lifecycle.ts";
import type { RunEnd, RunInput } from "../../run/phases.ts";
import { RunSandbox } from "./container.ts";

/** One engine client per engine address for the worker's life: dockerode keeps no connection open between calls. */
const engines = new Map<string, Docker>();

export function engineFor(settings: SandboxSettings): Docker {
  const key = engineLabel(settings.engine);
  let docker = engines.get(key);
  if (!docker) {
    docker = openEngine(settings.engine);
    engines.set(key, docker);
  }
  return docker;
}

/**
 * Runs the phases of a run; for a pipeline with `sandbox`, every process of the run (setup steps,
 * the agent) runs in one container of its own, which is removed when the run ends however it ends.
 * A container that could not be started ends the run with its diagnostic (sandbox_image_missing,
 * sandbox_engine_unreachable), whatever the phase that first needed it made of the failed start.
 */
export async function withRunSandbox(
  deps: ExecuteDeps,
  input: RunInput,
  phases: (deps: ExecuteDeps, input: RunInput) => Promise<RunEnd>,
): Promise<RunEnd> {
  const sandbox = input.pipeline.sandbox;
  if (!sandbox) return phases(deps, input);
  const settings = sandboxSettings(deps.config);
  const run = new RunSandbox({
    docker: engineFor(settings),
    settings,
    sandbox,
    configDir: deps.config.dir,
    paths: input.paths,
    invocationId: input.invocationId,
    workerId: deps.workerId,
  });
  // the agent reaches the daemon at sandboxes.mcp_url: the worker's own address may mean nothing inside
  const daemonUrl = settings.mcpUrl ? settings.mcpUrl.replace(/\/mcp$/, "") : deps.daemonUrl;
  try {
    const end = await phases({ ...deps, spawner: run, ...(daemonUrl ? { daemonUrl } : {}) }, input);
    return run.failure && end.kind === "failed" ? { kind: "failed", diagnostic: run.failure } : end;
  } finally {
    await run.close().catch((error) =>
      deps.logger.warn("removing the sandbox container failed; the sweeper removes it later", {
        event: "sandbox.remove_failed",
        invocation: input.invocationId,
        error: (error as Error).message,
      }),
    );
  }
}
