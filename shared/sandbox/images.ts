import { readdir } from "node:fs/promises";
import { join, relative } from "node:path";
import type Docker from "dockerode";
import type { ImageVariant, SandboxSettings } from "../config/sandbox-types.ts";
import { DEFAULT_IMAGES } from "../config/sandboxes.ts";
import type { ConfigSnapshot } from "../config/types.ts";
import { followProgress, imageExists, type ProgressLine, pullImage, tagImage } from "./engine.ts";

/** Where `svc image pull` gets one of the default images: `<registry>/agent:default`. */
export function registryReference(registry: string, image: string): string {
  return `${registry}/${image}`;
}

/** The registry host of a reference such as `registry.example.com/svc` (what credentials are offered to). */
export function registryHost(registry: string): string {
  return registry.split("/")[0]!;
}

/** The variant of `agent:<variant>`; undefined for the two default images. */
export function variantOf(image: string): string | undefined {
  if ((DEFAULT_IMAGES as readonly string[]).includes(image)) return undefined;
  return image.startsWith("agent:") ? image.slice("agent:".length) : undefined;
}

/**
 * Pulls `<registry>/agent:default` and `<registry>/studio:default` and tags them `agent:default` and
 * `studio:default` here; nothing else. Variants are made on the hosts whose pipelines need them.
 */
export async function pullDefaultImages(
  docker: Docker,
  registry: string,
  show: ProgressLine,
  auth?: { username: string; password: string },
): Promise<string[]> {
  const pulled: string[] = [];
  for (const image of DEFAULT_IMAGES) {
    const reference = registryReference(registry, image);
    show(`pulling ${reference}`);
    await pullImage(docker, reference, show, auth && { ...auth, serveraddress: registryHost(registry) });
    await tagImage(docker, reference, image);
    show(`tagged ${reference} as ${image}`);
    pulled.push(image);
  }
  return pulled;
}

/** Variants being made by this process: a second run needing one waits for the first one's work. */
const making = new Map<string, Promise<void>>();

/**
 * Makes `agent:<variant>` on this host if it is not here yet: built from its directory under
 * .svc/, or pulled from its reference and tagged. Once per variant, however many runs ask at once.
 */
export function ensureVariant(
  docker: Docker,
  configDir: string,
  variant: ImageVariant,
  show: ProgressLine,
): Promise<void> {
  const image = `agent:${variant.name}`;
  const pending = making.get(image);
  if (pending) {
    show(`waiting for ${image}, which another run is making`);
    return pending;
  }
  const work = (async () => {
    if (await imageExists(docker, image)) return;
    if ("pull" in variant) {
      show(`pulling ${variant.pull} for ${image}`);
      await pullImage(docker, variant.pull, show);
      await tagImage(docker, variant.pull, image);
    } else {
      const context = join(configDir, variant.build);
      show(`building ${image} from ${context}`);
      await buildImage(docker, context, image, show);
    }
    show(`${image} is ready`);
  })().finally(() => making.delete(image));
  making.set(image, work);
  return work;
}

/** Builds the Dockerfile of `context` as `tag`; `buildargs` such as BASE_IMAGE. */
export async function buildImage(
  docker: Docker,
  context: string,
  tag: string,
  show: ProgressLine,
  options: { buildargs?: Record<string, string>; networkmode?: string } = {},
): Promise<void> {
  const src = await filesUnder(context);
  const stream = await docker.buildImage({ context, src }, { t: tag, rm: true, forcerm: true, ...options });
  await followProgress(docker, stream, show);
}

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)));
}

export interface ImageStatus {
  image: string;
  present: boolean;
  /** pipelines that run in it; empty for a default image no pipeline names */
  pipelines: string[];
  /** how a missing image is made */
  source: string;
}

/** What the host has against what the configuration needs: the two defaults and every variant in use. */
export async function imageInventory(
  docker: Docker,
  config: Pick<ConfigSnapshot, "pipelines" | "sandboxes">,
  settings: SandboxSettings,
): Promise<ImageStatus[]> {
  const users = new Map<string, string[]>(DEFAULT_IMAGES.map((image) => [image, []]));
  for (const pipeline of Object.values(config.pipelines)) {
    if (!pipeline.sandbox) continue;
    users.set(pipeline.sandbox.image, [...(users.get(pipeline.sandbox.image) ?? []), pipeline.name]);
  }
  const statuses: ImageStatus[] = [];
  for (const [image, pipelines] of users) {
    const variant = variantOf(image);
    const spec = variant ? settings.images[variant] : undefined;
    const source = !variant
      ? settings.registry
        ? `svc image pull (${registryReference(settings.registry, image)})`
        : 'svc image pull (set "sandboxes.registry" first)'
      : spec && "build" in spec
        ? `built on first use from .svc/${spec.build}`
        : `pulled on first use from ${spec && "pull" in spec ? spec.pull : "?"}`;
    statuses.push({ image, present: await imageExists(docker, image), pipelines: pipelines.sort(), source });
  }
  return statuses;
}
