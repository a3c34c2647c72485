import { closeSync, type Dirent, fstatSync, openSync, readdirSync, readSync } from "node:fs";
import { extname, join, relative } from "node:path";
import type pg from "pg";
import { type NewArtifact, upsertArtifact } from "../../db/artifacts.ts";
import { newId } from "../../shared/ids.ts";

/** Stored rendered text is capped: the file at `path` stays the source of truth. */
const RENDER_LIMIT = 256 * 1024;

const MEDIA_TYPES: Record<string, string> = {
  ".json": "application/json",
  ".md": "text/markdown",
  ".txt": "text/plain",
  ".log": "text/plain",
  ".html": "text/html",
  ".csv": "text/csv",
  ".diff": "text/x-diff",
  ".patch": "text/x-diff",
};

function mediaType(path: string): string {
  return MEDIA_TYPES[extname(path).toLowerCase()] ?? "application/octet-stream";
}

/** `head`: the file's first bytes, at least RENDER_LIMIT + 1 of them when `size` is larger */
function render(head: Buffer, size: number, type: string): string {
  const isText =
    type.startsWith("text/") || type === "application/json" || !head.subarray(0, 8000).includes(0);
  if (!isText) return `(binary, ${size} bytes)`;
  const text = head.subarray(0, RENDER_LIMIT).toString("utf8");
  return size > RENDER_LIMIT ? `${text}\n… (truncated, ${size} bytes in total)` : text;
}

interface ArtifactEntry {
  invocationId: string;
  taskId: string | null;
  name: string;
  path: string;
  mediaType?: string;
}

/**
 * The part of a file its artifact row needs (what render keeps, and its size), read in place.
 * Synchronously: a bounded read of a step's log is four system calls on the event loop, where
 * the thread pool would take four round trips (a thread's wake-up and the loop's, each time).
 */
function readHead(path: string): { head: Buffer; size: number } {
  const fd = openSync(path, "r");
  try {
    const size = fstatSync(fd).size;
    const head = Buffer.allocUnsafe(Math.min(size, RENDER_LIMIT + 1));
    let read = 0;
    while (read < head.length) {
      const n = readSync(fd, head, read, head.length - read, read);
      if (n === 0) break;
      read += n;
    }
    return { head: head.subarray(0, read), size };
  } finally {
    closeSync(fd);
  }
}

/** A file as an artifact row: its size, its media type and its rendered text; undefined when nothing was written. */
export async function fileArtifact(entry: ArtifactEntry): Promise<NewArtifact | undefined> {
  let file: { head: Buffer; size: number };
  try {
    file = readHead(entry.path);
  } catch {
    return undefined; // nothing was written: nothing to record
  }
  return artifactRow(entry, file.head, file.size);
}

/** The artifact row of a file whose content is already in hand (it was just written). */
export function artifactOf(entry: ArtifactEntry, content: Buffer): NewArtifact {
  return artifactRow(entry, content, content.length);
}

function artifactRow(entry: ArtifactEntry, head: Buffer, size: number): NewArtifact {
  const type = entry.mediaType ?? mediaType(entry.path);
  return {
    id: newId("artifact"),
    invocationId: entry.invocationId,
    taskId: entry.taskId,
    name: entry.name,
    mediaType: type,
    size,
    path: entry.path,
    rendered: render(head, size, type),
  };
}

export async function recordFileArtifact(db: pg.Pool, entry: ArtifactEntry): Promise<void> {
  const artifact = await fileArtifact(entry);
  if (artifact) await upsertArtifact(db, artifact);
}

/** The regular files under `dir` (a symbolic link is not one), listed on the event loop as the run's other small files are */
function listFiles(dir: string): string[] {
  let entries: Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true, recursive: true });
  } catch {
    return []; // no surface directory (the run never got one): nothing to record
  }
  return entries.filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath, entry.name));
}

/** Every regular file the run left in the surface directory, named `surface/<relative path>`. */
export async function recordSurface(db: pg.Pool, invocationId: string, surfaceDir: string): Promise<number> {
  const files = listFiles(surfaceDir);
  for (const file of files) {
    await recordFileArtifact(db, {
      invocationId,
      taskId: null,
      name: `surface/${relative(surfaceDir, file)}`,
      path: file,
    });
  }
  return files.length;
}
