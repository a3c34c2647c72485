import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import { extname, join } from "node:path";
import type pg from "pg";
import { type NewArtifact, upsertArtifact } from "../../db/artifacts.ts";
import { newId } from "../../shared/ids.ts";
import type { Logger } from "../../shared/logger.ts";
import { walkNoFollow } from "../../shared/no-follow.ts";
import { redactFileInPlace, replaceFileSync } from "./redact-file.ts";
import { redactorFor } from "./run-secrets.ts";

/** Stored rendered text is capped: the file at `path` stays the source of truth. */
const RENDER_LIMIT = 256 * 1024;
/**
 * Read past the cap, so that a secret that begins before the cut is whole in what is redacted, and
 * no prefix of it is kept (a value longer than this that straddles the cut keeps its first bytes).
 */
const REDACT_OVERLAP = 16 * 1024;

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

/**
 * The stored text of a file: its first RENDER_LIMIT bytes, redacted (shared/redact.ts) of the run's
 * secrets. `head`: the file's first bytes, RENDER_LIMIT + REDACT_OVERLAP of them when `size` is larger.
 * Binary content is not stored at all, only named by its size: there is no text to redact.
 */
function render(head: Buffer, size: number, type: string, redactor: Redaction): string {
  const isText =
    type.startsWith("text/") || type === "application/json" || !head.subarray(0, 8000).includes(0);
  if (!isText) return `(binary, ${size} bytes)`;
  // redacted before the cut: a secret across it is replaced whole, not cut into a kept prefix
  const text = redactor.redact(head.toString("utf8"));
  if (size <= RENDER_LIMIT) return text;
  const kept = Buffer.from(text).subarray(0, RENDER_LIMIT).toString("utf8");
  return `${kept}\n… (truncated, ${size} bytes in total)`;
}

/** What a file's text is redacted with: its run's redactor, or nothing when it was redacted already. */
interface Redaction {
  redact(text: string): string;
}
const ALREADY_REDACTED: Redaction = { redact: (text) => text };

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
    return headOf(fd, fstatSync(fd).size);
  } finally {
    closeSync(fd);
  }
}

/**
 * A file as an artifact row: its size, its media type and its rendered text, redacted of the secrets
 * of its run (run-secrets.ts); undefined when nothing was written.
 */
function headOf(fd: number, size: number): { head: Buffer; size: number } {
  const head = Buffer.allocUnsafe(Math.min(size, RENDER_LIMIT + REDACT_OVERLAP));
  let read = 0;
  while (read < head.length) {
    const n = readSync(fd, head, read, head.length - read, read);
    if (n === 0) break;
    read += n;
  }
  return { head: head.subarray(0, read), size };
}

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
  return artifactRow(entry, content.subarray(0, RENDER_LIMIT + REDACT_OVERLAP), content.length);
}

function artifactRow(
  entry: ArtifactEntry,
  head: Buffer,
  size: number,
  redaction: Redaction = redactorFor(entry.invocationId),
): NewArtifact {
  const type = entry.mediaType ?? mediaType(entry.path);
  return {
    id: newId("artifact"),
    invocationId: entry.invocationId,
    taskId: entry.taskId,
    name: entry.name,
    mediaType: type,
    size,
    path: entry.path,
    // every artifact's stored text comes through here, redacted with its run's values
    rendered: render(head, size, type, redaction),
  };
}

/**
 * The agent's transcript as an artifact, its file on disk redacted first: the copy kept for
 * workspaces.transcriptRetentionDays holds no secret of the run either. A file within what is
 * stored (the common case) is redacted with its stored text in one pass; a larger one in chunks.
 * A file that could not be rewritten is logged, and its stored text is redacted all the same.
 */
export async function transcriptArtifact(
  entry: ArtifactEntry,
  logger: Logger,
): Promise<NewArtifact | undefined> {
  let file: { head: Buffer; size: number };
  try {
    file = readHead(entry.path);
  } catch {
    return undefined; // nothing was written: nothing to record
  }
  const redactor = redactorFor(entry.invocationId);
  try {
    if (file.head.length === file.size) {
      const text = file.head.toString("utf8");
      const redacted = redactor.redact(text);
      if (redacted === text) return artifactRow(entry, file.head, file.size, ALREADY_REDACTED);
      const content = Buffer.from(redacted);
      replaceFileSync(entry.path, content);
      return artifactRow(entry, content, content.length, ALREADY_REDACTED);
    }
    await redactFileInPlace(entry.path, redactor, REDACT_OVERLAP);
  } catch (error) {
    logger.warn("the transcript on disk could not be redacted; its stored text is", {
      event: "artifact.redact_failed",
      invocation: entry.invocationId,
      path: entry.path,
      error: (error as Error).message,
    });
  }
  return fileArtifact(entry);
}

export async function recordFileArtifact(db: pg.Pool, entry: ArtifactEntry): Promise<void> {
  const artifact = await fileArtifact(entry);
  if (artifact) await upsertArtifact(db, artifact);
}

/**
 * Every regular file the run left in the surface directory, named `surface/<relative path>`. Read
 * once the run's processes are gone (a sandboxed run's container is removed first), each file
 * opened without following a link and kept only when fstat says it is a regular file: a link to a
 * host file never becomes an artifact with that file's text, and a FIFO never blocks the worker.
 * What is skipped gets a line in the worker's log, with the run's invocation.
 */
export async function recordSurface(
  db: pg.Pool,
  logger: Logger,
  invocationId: string,
  surfaceDir: string,
): Promise<number> {
  const artifacts: NewArtifact[] = [];
  try {
    walkNoFollow(surfaceDir, {
      visit(fd, stats, path) {
        if (!stats.isFile()) return;
        const { head, size } = headOf(fd, stats.size);
        const entry = { invocationId, taskId: null, name: `surface/${path}`, path: join(surfaceDir, path) };
        artifacts.push(artifactRow(entry, head, size));
      },
      skip({ path, kind }) {
        logger.warn(`surface/${path} is a ${kind}, not a regular file: skipped, no artifact`, {
          event: "run.surface_skipped",
          invocation: invocationId,
          path: `surface/${path}`,
          kind,
        });
      },
    });
  } catch {
    return 0; // no surface directory (the run never got one): nothing to record
  }
  for (const artifact of artifacts) await upsertArtifact(db, artifact);
  return artifacts.length;
}
