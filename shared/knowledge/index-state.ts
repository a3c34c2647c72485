import { statSync } from "node:fs";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

/** What the last index build covered; written last, so a half-built index is never pointed at. */
export interface IndexState {
  /** sourceHash of the documents plus the engine settings the index was built for */
  hash: string;
  indexedAt: string;
  /** directory name of the qmd index under the data directory */
  qmdDir: string;
  /** the Chroma collection, with the vector engine */
  collection?: string;
  documents: { path: string; size: number }[];
}

const STATE_FILE = "state.json";
const LOCK_FILE = "build.lock";

export async function readIndexState(dataDir: string): Promise<IndexState | undefined> {
  try {
    return JSON.parse(await readFile(join(dataDir, STATE_FILE), "utf8")) as IndexState;
  } catch {
    // absent or torn: the index is rebuilt, which is always safe
    return undefined;
  }
}

export async function writeIndexState(dataDir: string, state: IndexState): Promise<void> {
  const temporary = join(dataDir, `${STATE_FILE}.${process.pid}.tmp`);
  await writeFile(temporary, `${JSON.stringify(state, null, 2)}\n`);
  await rename(temporary, join(dataDir, STATE_FILE));
}

/**
 * When the state file last changed (0: there is none). Every search asks, to follow a reindex: one
 * stat(2) on the event loop, where the thread pool would cost a thread's wake-up and the loop's.
 */
export function stateModifiedAt(dataDir: string): number {
  try {
    return statSync(join(dataDir, STATE_FILE)).mtimeMs;
  } catch {
    return 0; // absent or unreadable: nothing to follow, the caller keeps the state it has
  }
}

/** Who holds the build lock: a waiter takes over when that process is gone. */
interface LockOwner {
  pid: number;
  host: string;
}

/**
 * One index build at a time per data directory: an ingress and workers of one host start
 * together and would otherwise each build. The lock is a file created exclusively, naming its
 * holder; a holder that died (its pid is gone on this host) leaves a lock the next process takes
 * over at once, so a crashed build never blocks a start. Node has no flock(2), and the CLI's
 * `svc knowledge reindex` may run without a database, so neither flock nor an advisory lock is used.
 */
export async function withIndexLock<T>(
  dataDir: string,
  work: () => Promise<T>,
  onWait?: (owner: LockOwner) => void,
): Promise<T> {
  await mkdir(dataDir, { recursive: true });
  const lock = join(dataDir, LOCK_FILE);
  const me: LockOwner = { pid: process.pid, host: hostname() };
  let told = false;
  for (;;) {
    try {
      await writeFile(lock, JSON.stringify(me), { flag: "wx" });
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const owner = await readOwner(lock);
      if (owner && isGone(owner)) {
        await rm(lock, { force: true });
        continue;
      }
      if (owner && !told) {
        told = true;
        onWait?.(owner);
      }
      await sleep(100);
    }
  }
  try {
    return await work();
  } finally {
    await rm(lock, { force: true });
  }
}

async function readOwner(lock: string): Promise<LockOwner | undefined> {
  try {
    return JSON.parse(await readFile(lock, "utf8")) as LockOwner;
  } catch {
    // gone since, or created and not yet written: look again at the next turn
    return undefined;
  }
}

/** A holder on another host (a shared directory) is never presumed dead. */
function isGone(owner: LockOwner): boolean {
  if (owner.host !== hostname()) return false;
  try {
    process.kill(owner.pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ESRCH";
  }
}
