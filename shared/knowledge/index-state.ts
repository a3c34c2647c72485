import { mkdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
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
const LOCK_DIR = "index.lock";
const LOCK_STALE_MS = 60 * 60_000;

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

export async function stateModifiedAt(dataDir: string): Promise<number> {
  return (await stat(join(dataDir, STATE_FILE)).catch(() => undefined))?.mtimeMs ?? 0;
}

/**
 * One index build at a time per data directory: the ingress and the worker of one host start
 * together and would otherwise both build. mkdir is atomic; a lock older than an hour is a
 * crashed builder's and is taken over.
 */
export async function withIndexLock<T>(dataDir: string, work: () => Promise<T>): Promise<T> {
  await mkdir(dataDir, { recursive: true });
  const lock = join(dataDir, LOCK_DIR);
  for (;;) {
    try {
      await mkdir(lock);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const age = Date.now() - ((await stat(lock).catch(() => undefined))?.mtimeMs ?? Date.now());
      if (age > LOCK_STALE_MS) await rm(lock, { recursive: true, force: true });
      else await sleep(200);
    }
  }
  try {
    return await work();
  } finally {
    await rm(lock, { recursive: true, force: true });
  }
}
