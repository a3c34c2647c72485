import { lstatSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { ConfigFile } from "../../shared/config/source.ts";
import type { ConfigProblem } from "../../shared/config/types.ts";
import { cacheRoot, diskUsage } from "../../shared/repo-cache.ts";
import type { CheckOutcome, DoctorCheck } from "./types.ts";

/**
 * The worker host's repository cache (`<config dir>/workspaces/.repos`, shared/repo-cache.ts):
 * what it holds on disk, against `workspaces.repo_cache.max_size`, and how many mirrors. Over the
 * bound (possible between fetches: a worker evicts after its next fetch, and never a mirror in
 * use) is the warning `repo_cache_full`. Meaningful on a worker host: each host has its own.
 */
export const repoCacheCheck: DoctorCheck = {
  name: "repo-cache",
  async run(ctx): Promise<CheckOutcome> {
    const loaded = await ctx.config();
    if (!loaded.ok) return { status: "skipped", detail: "the configuration does not load", problems: [] };
    const root = cacheRoot(loaded.config.dir);
    const max = loaded.config.workspaces.repoCache.maxSizeBytes;
    const bytes = diskUsage(root);
    const mirrors = countMirrors(root);
    const detail = `${formatBytes(bytes)} of ${formatBytes(max)} in ${mirrors} mirror${mirrors === 1 ? "" : "s"} (${root})`;
    if (bytes <= max) return { status: "ok", detail, problems: [] };
    const problems: ConfigProblem[] = [];
    new ConfigFile("daemon.yaml", problems).report(
      ["workspaces", "repo_cache", "max_size"],
      "repo_cache_full",
      `the repository cache ${root} holds ${formatBytes(bytes)}, more than "workspaces.repo_cache.max_size" (${formatBytes(max)}) - a worker removes the least recently used mirrors no run uses after its next fetch; raise max_size if the host has the disk, or remove ${root} while no worker runs`,
      "warning",
    );
    return { status: "warning", detail, problems };
  },
};

/** Mirrors are `<root>/<host>/<owner>/<name>.git` (worker/checkout/cache.ts); hidden folders (an eviction's trash) are not. */
function countMirrors(root: string): number {
  let count = 0;
  const walk = (dir: string, level: number) => {
    let names: string[] = [];
    try {
      names = readdirSync(dir);
    } catch {
      return; // no cache yet, or removed meanwhile
    }
    for (const name of names) {
      if (name.startsWith(".")) continue;
      const path = join(dir, name);
      let directory = false;
      try {
        directory = lstatSync(path).isDirectory();
      } catch {
        continue;
      }
      if (!directory) continue;
      if (level === 2) {
        if (name.endsWith(".git")) count++;
      } else walk(path, level + 1);
    }
  };
  walk(root, 0);
  return count;
}

/** `0 B`, `512 KiB`, `1.2 GiB`, `20 GiB`: binary units, one decimal when not whole. */
export function formatBytes(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${unit === 0 ? value : Number(value.toFixed(1))} ${units[unit]}`;
}
