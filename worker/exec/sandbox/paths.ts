import type { Workspace } from "../../../shared/workspace-layout.ts";

/** Where the run's directories appear inside its container; WORKTREE, RUN_DIR and SURFACE_DIR name these. */
export const CONTAINER_PATHS = {
  checkout: "/svc/worktree",
  runDir: "/svc/run",
  surfaceDir: "/svc/surface",
  /** the agent's own folder, mounted in the agent's container only */
  agentDir: "/svc/agent",
} as const;

/** HOME of every process in a sandbox: a tmpfs, so nothing written there outlives the container. */
export const CONTAINER_HOME = "/svc/home";

/** The container's PATH: the host's PATH names host directories and means nothing inside. */
export const CONTAINER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

export type PathMap = [host: string, container: string][];

export function pathMap(paths: Workspace): PathMap {
  return [
    [paths.checkout, CONTAINER_PATHS.checkout],
    [paths.runDir, CONTAINER_PATHS.runDir],
    [paths.surfaceDir, CONTAINER_PATHS.surfaceDir],
    [paths.agentDir, CONTAINER_PATHS.agentDir],
  ];
}

/** A host path (or a text naming one, such as `--mcp-config=<path>`) as the container sees it. */
export function inContainer(text: string, map: PathMap): string {
  let out = text;
  for (const [host, container] of map) out = out.split(host).join(container);
  return out;
}

/**
 * The environment a process gets inside the container: the same variables with container paths,
 * the container's PATH, and HOME on its tmpfs unless the runtime gave it a private HOME in the
 * agent's folder (the agent CLIs do).
 */
export function containerEnvironment(env: Record<string, string>, map: PathMap): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) out[name] = inContainer(value, map);
  out.PATH = CONTAINER_PATH;
  if (!out.HOME?.startsWith(`${CONTAINER_PATHS.agentDir}/`)) out.HOME = CONTAINER_HOME;
  return out;
}
