import { createHash } from "node:crypto";
import { lstatSync, mkdirSync, readdirSync, renameSync, statSync, utimesSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { diskUsage } from "../../shared/repo-cache.ts";
import { type HeldLock, lockFile } from "./lock.ts";

// The repository cache of a worker host: one bare mirror per repository under
// `<config dir>/workspaces/.repos/<host>/<owner>/<name>.git` (a hidden folder: the retention sweep
// and what lists run folders pass it by). Beside each mirror, `<name>.git.lock`: its fetch lock
// (exclusive, one fetch at a time), and `<name>.git.use`: held shared by every worker process
// while one of its runs uses the mirror, so an eviction (exclusive, never waiting) passes a busy
// mirror by. The lock file's modification time is the mirror's last use: least recently used
// mirrors go first.

/** Where the mirror of `repo` fetched from `url` lives: the host's folder, then the repository's name. */
export function mirrorPath(root: string, repo: string, url: string): string {
  const [owner, name] = repo.split("/");
  if (
    !owner ||
    !name ||
    [owner, name].some((part) => part === "." || part === ".." || !/^[A-Za-z0-9_.-]+$/.test(part))
  )
    throw new Error(`"${repo}" is not an owner/name repository`);
  return join(root, hostFolder(url), owner, `${name}.git`);
}

function hostFolder(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.protocol === "http:" || parsed.protocol === "https:")
      return parsed.host.replace(/[^A-Za-z0-9.-]/g, "_");
  } catch {
    // not a URL: a local path
  }
  return `local-${createHash("sha256").update(url).digest("hex").slice(0, 12)}`;
}

/**
 * The runs of this process using each mirror, and the one shared lock that tells the host's other
 * worker processes so: taken by the first user, released with the last.
 */
const users = new Map<string, { count: number; lock: Promise<HeldLock | undefined> }>();

/**
 * Marks `mirror` in use until the returned release is called (which resolves once the host's other
 * processes see it free); waits while an eviction removes it.
 */
export async function useMirror(mirror: string): Promise<() => Promise<void>> {
  mkdirSync(join(mirror, ".."), { recursive: true, mode: 0o700 });
  let entry = users.get(mirror);
  if (!entry) {
    entry = { count: 0, lock: lockFile(`${mirror}.use`, "shared", { wait: true }) };
    users.set(mirror, entry);
  }
  entry.count++;
  const held = entry;
  try {
    await held.lock;
  } catch (error) {
    held.count--;
    if (held.count === 0 && users.get(mirror) === held) users.delete(mirror);
    throw error;
  }
  touch(`${mirror}.lock`);
  let released = false;
  return async () => {
    if (released) return;
    released = true;
    held.count--;
    if (held.count === 0 && users.get(mirror) === held) {
      users.delete(mirror);
      await (await held.lock)?.release();
    }
  };
}

function touch(path: string): void {
  const now = new Date();
  try {
    utimesSync(path, now, now);
  } catch {
    // the lock file is made by the fetch lock; before that the mirror has never been used
  }
}

interface MirrorOnDisk {
  path: string;
  bytes: number;
  lastUsed: number;
}

function mirrorsUnder(root: string): MirrorOnDisk[] {
  const found: MirrorOnDisk[] = [];
  const walk = (dir: string, level: number) => {
    let names: string[] = [];
    try {
      names = readdirSync(dir);
    } catch {
      return; // no cache yet
    }
    for (const name of names) {
      const path = join(dir, name);
      if (level === 2 && name.endsWith(".git")) {
        let lastUsed = 0;
        try {
          lastUsed = statSync(`${path}.lock`).mtimeMs;
        } catch {
          // never locked: never used by a run, so the first to go
        }
        found.push({ path, bytes: diskUsage(path), lastUsed });
      } else if (level < 2 && !name.startsWith(".")) {
        if (lstatSync(path).isDirectory()) walk(path, level + 1);
      }
    }
  };
  walk(root, 0);
  return found;
}

export interface CacheBound {
  /** what the cache holds after the pass */
  bytes: number;
  /** the mirrors removed, least recently used first */
  evicted: string[];
}

/**
 * Keeps the cache within `maxBytes`: least recently used mirrors are removed until it fits, never
 * one in use (by a run of this process, or of another worker process on the host: its shared lock
 * refuses our exclusive one) and never `keep`. A mirror is renamed out of the way first, so no run
 * ever finds half of one.
 */
export async function boundCache(root: string, maxBytes: number, keep?: string): Promise<CacheBound> {
  const mirrors = mirrorsUnder(root).sort((a, b) => a.lastUsed - b.lastUsed);
  let bytes = mirrors.reduce((sum, mirror) => sum + mirror.bytes, 0);
  const evicted: string[] = [];
  for (const mirror of mirrors) {
    if (bytes <= maxBytes) break;
    if (mirror.path === keep || users.has(mirror.path)) continue;
    const use = await lockFile(`${mirror.path}.use`, "exclusive", { wait: false });
    if (!use) continue;
    const fetching = await lockFile(`${mirror.path}.lock`, "exclusive", { wait: false });
    try {
      if (!fetching) continue;
      const trash = join(root, `.evicted-${process.pid}-${Date.now()}-${evicted.length}`);
      renameSync(mirror.path, trash);
      await rm(trash, { recursive: true, force: true });
      bytes -= mirror.bytes;
      evicted.push(mirror.path);
    } finally {
      await fetching?.release();
      await use.release();
    }
  }
  return { bytes, evicted };
}
