import { readdir, readFile, stat } from "node:fs/promises";
import { extname, join, relative } from "node:path";
import type pg from "pg";
import { type NewArtifact, upsertArtifact } from "../db/artifacts.ts";
import { newId } from "../shared/ids.ts";

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

function render(content: Buffer, type: string): string {
  const isText =
    type.startsWith("text/") || type === "application/json" || !content.subarray(0, 8000).includes(0);
  if (!isText) return `(binary, ${content.length} bytes)`;
  const text = content.subarray(0, RENDER_LIMIT).toString("utf8");
  return content.length > RENDER_LIMIT ? `${text}\n… (truncated, ${content.length} bytes in total)` : text;
}

interface ArtifactEntry {
  invocationId: string;
  taskId: string | null;
  name: string;
  path: string;
  mediaType?: string;
}

/** A file as an artifact row: its size, its media type and its rendered text; undefined when nothing was written. */
export async function fileArtifact(entry: ArtifactEntry): Promise<NewArtifact | undefined> {
  let content: Buffer;
  try {
    content = await readFile(entry.path);
  } catch {
    return undefined; // nothing was written: nothing to record
  }
  return artifactOf(entry, content);
}

/** The artifact row of a file whose content is already in hand (it was just written). */
export function artifactOf(entry: ArtifactEntry, content: Buffer): NewArtifact {
  const type = entry.mediaType ?? mediaType(entry.path);
  return {
    id: newId("artifact"),
    invocationId: entry.invocationId,
    taskId: entry.taskId,
    name: entry.name,
    mediaType: type,
    size: content.length,
    path: entry.path,
    rendered: render(content, type),
  };
}

export async function recordFileArtifact(db: pg.Pool, entry: ArtifactEntry): Promise<void> {
  const artifact = await fileArtifact(entry);
  if (artifact) await upsertArtifact(db, artifact);
}

async function listFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true }).catch(() => []);
  return entries.filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath, entry.name));
}

/** Every regular file the run left in the surface directory, named `surface/<relative path>`. */
export async function recordSurface(db: pg.Pool, invocationId: string, surfaceDir: string): Promise<number> {
  const files = await listFiles(surfaceDir);
  for (const file of files) {
    if (!(await stat(file)).isFile()) continue;
    await recordFileArtifact(db, {
      invocationId,
      taskId: null,
      name: `surface/${relative(surfaceDir, file)}`,
      path: file,
    });
  }
  return files.length;
}
