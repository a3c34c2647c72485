import { lstatSync, readdirSync } from "node:fs";
import { join } from "node:path";

/**
 * Where a worker host keeps its repository mirrors (worker/checkout/cache.ts): a hidden folder
 * beside the run folders, which the retention sweep passes by. `svc doctor` reads its size too.
 */
export function cacheRoot(configDir: string): string {
  return join(configDir, "workspaces", ".repos");
}

/** Bytes the folder takes on disk (allocated blocks, as du counts them), links not followed. */
export function diskUsage(path: string): number {
  let total = 0;
  let stats: ReturnType<typeof lstatSync>;
  try {
    stats = lstatSync(path);
  } catch {
    return 0; // gone while we counted: an eviction or a rebuild of another process
  }
  total += stats.blocks * 512;
  if (!stats.isDirectory()) return total;
  let names: string[] = [];
  try {
    names = readdirSync(path);
  } catch {
    return total; // removed meanwhile, as above
  }
  for (const name of names) total += diskUsage(join(path, name));
  return total;
}
