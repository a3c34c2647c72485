import type Docker from "dockerode";
import { DEFAULT_IMAGES } from "../../shared/config/sandboxes.ts";
import { ConfigFile } from "../../shared/config/source.ts";
import type { ConfigProblem, ConfigSnapshot } from "../../shared/config/types.ts";
import {
  engineLabel,
  engineUnreachableMessage,
  imageExists,
  isEngineUnreachable,
  openEngine,
} from "../../shared/sandbox/engine.ts";
import { registryReference, variantOf } from "../../shared/sandbox/images.ts";
import { sandboxSettings } from "../../shared/sandbox/settings.ts";
import type { CheckOutcome, CheckStatus, DoctorCheck } from "./types.ts";

/** how long the engine may take to answer its ping */
const PING_TIMEOUT_MS = 10_000;

/** The images the sandboxed pipelines run in, each with its pipelines (sorted), in first-use order. */
export function neededImages(config: Pick<ConfigSnapshot, "pipelines">): Map<string, string[]> {
  const images = new Map<string, string[]>();
  for (const pipeline of Object.values(config.pipelines)) {
    if (!pipeline.sandbox) continue;
    images.set(pipeline.sandbox.image, [...(images.get(pipeline.sandbox.image) ?? []), pipeline.name].sort());
  }
  return images;
}

/** The engine answers its ping and says its version; throws what dockerode threw otherwise. */
export async function engineVersion(docker: Docker): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const silence = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(Object.assign(new Error("no answer"), { code: "ETIMEDOUT" })),
      PING_TIMEOUT_MS,
    );
  });
  try {
    await Promise.race([docker.ping(), silence]);
    const version = (await Promise.race([docker.version(), silence])) as {
      Version?: string;
      ApiVersion?: string;
    };
    return `${version.Version ?? "?"} (API ${version.ApiVersion ?? "?"})`;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * `svc doctor --deep`, the sandbox's link: when a pipeline runs in a sandbox, the container
 * engine of `sandboxes.engine` (or DOCKER_HOST) answers (`GET /_ping`, `GET /version`) and holds
 * each image those pipelines run in (`GET /images/{name}/json`), as `svc image list` reads them.
 * An engine that does not answer is `sandbox_engine_unreachable` (the images are then not
 * checked, and the check says so); agent:default or studio:default absent is
 * `sandbox_image_missing` with `svc image pull`; a variant not made yet is no problem, since the
 * first run that needs it makes it (its detail says so).
 */
export const sandboxCheck: DoctorCheck = {
  name: "sandbox",
  async run(ctx): Promise<CheckOutcome> {
    const loaded = await ctx.config();
    if (!loaded.ok) return { status: "skipped", detail: "the configuration has errors", problems: [] };
    const { config } = loaded;
    const images = neededImages(config);
    if (images.size === 0)
      return { status: "skipped", detail: "no pipeline runs in a sandbox", problems: [] };
    const settings = sandboxSettings(config);
    const docker = openEngine(settings.engine);
    const problems: ConfigProblem[] = [];
    const file = new ConfigFile("daemon.yaml", problems);
    const label = engineLabel(settings.engine);
    let version: string;
    try {
      version = await engineVersion(docker);
    } catch (error) {
      const reason = isEngineUnreachable(error)
        ? engineUnreachableMessage(settings.engine, error)
        : `the container engine at ${label} refused its ping (${(error as Error).message.split("\n")[0]}) - check that it is a Docker Engine API (dockerd, or podman's API service)`;
      file.report(
        ["sandboxes", "engine"],
        "sandbox_engine_unreachable",
        `${reason}; the images of ${[...images.keys()].join(", ")} were not checked`,
      );
      return {
        status: "error",
        detail: `${label} does not answer: ${[...images.keys()].join(", ")} not checked`,
        problems,
      };
    }
    const details: string[] = [];
    for (const [image, pipelines] of images) {
      const present = await imageExists(docker, image);
      const variant = variantOf(image);
      if (present) {
        details.push(`${image} present`);
        continue;
      }
      if (!variant && (DEFAULT_IMAGES as readonly string[]).includes(image)) {
        const from = settings.registry
          ? `run "svc image pull" (it fetches ${registryReference(settings.registry, image)})`
          : `set "sandboxes.registry" to where svc's images are published, then run "svc image pull"`;
        file.report(
          ["sandboxes"],
          "sandbox_image_missing",
          `${image} is not on the container engine at ${label}: every run of ${pipelines.join(", ")} fails sandbox_image_missing - ${from}`,
        );
        details.push(`${image} missing`);
        continue;
      }
      const spec = variant ? settings.images[variant] : undefined;
      const how =
        spec && "build" in spec
          ? `built from .svc/${spec.build}`
          : `pulled from ${spec && "pull" in spec ? spec.pull : "?"}`;
      details.push(`${image} not made yet (${how} by the first run of ${pipelines.join(", ")})`);
    }
    const status: CheckStatus = problems.length ? "error" : "ok";
    return { status, detail: `${label}, engine ${version}: ${details.join(", ")}`, problems };
  },
};
