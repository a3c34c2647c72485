import type { SandboxSettings } from "../config/sandbox-types.ts";
import { DEFAULT_SANDBOX_LIMITS, DEFAULT_SANDBOX_USER, engineFromEnvironment } from "../config/sandboxes.ts";
import type { ConfigSnapshot } from "../config/types.ts";

/** The snapshot's `sandboxes:` block, or its defaults for a snapshot built without one. */
export function sandboxSettings(config: Pick<ConfigSnapshot, "sandboxes">): SandboxSettings {
  return (
    config.sandboxes ?? {
      engine: engineFromEnvironment(process.env),
      network: "none",
      user: DEFAULT_SANDBOX_USER,
      limits: { ...DEFAULT_SANDBOX_LIMITS },
      images: {},
    }
  );
}

/** Pipelines without `sandbox`: they run on the worker host, as its user, with its files and network. */
export function unsandboxedPipelines(config: Pick<ConfigSnapshot, "pipelines">): string[] {
  return Object.values(config.pipelines)
    .filter((pipeline) => !pipeline.sandbox)
    .map((pipeline) => pipeline.name)
    .sort();
}
