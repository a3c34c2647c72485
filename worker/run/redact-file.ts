import { constants, renameSync, rmSync, writeFileSync } from "node:fs";
import { type FileHandle, open, rename, rm } from "node:fs/promises";
import { StringDecoder } from "node:string_decoder";
import type { Redactor } from "../../shared/redact.ts";

/** How much of a large file is redacted at a time. */
const CHUNK_BYTES = 1024 * 1024;

/**
 * Rewrites the file at `path` with `redactor`'s secrets replaced, so the copy svc keeps on disk (a
 * transcript, for workspaces.transcriptRetentionDays) holds none either. Read in chunks, each
 * piece carrying `overlap` characters into the next, so a secret across a chunk's end is replaced
 * whole. The redacted text goes to a file beside it that replaces it by rename, and only when
 * something was replaced; a file with no secret is left as it was, byte for byte. A path that is not
 * a regular file (a link put in its place) is left alone. Returns whether the file was rewritten.
 */
export async function redactFileInPlace(path: string, redactor: Redactor, overlap: number): Promise<boolean> {
  let source: FileHandle;
  try {
    source = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch {
    return false; // nothing was written there (or a link was): nothing of ours to redact
  }
  const temporary = temporaryOf(path);
  let target: FileHandle | undefined;
  let created = false;
  let renamed = false;
  let replaced = 0;
  try {
    const stat = await source.stat();
    if (!stat.isFile()) return false;
    // exclusive, so never through a link: a file left there by a failed rewrite fails this one
    target = await open(temporary, "wx", stat.mode & 0o777);
    created = true;
    const decoder = new StringDecoder("utf8");
    const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
    let carry = "";
    for (;;) {
      const { bytesRead } = await source.read(buffer, 0, CHUNK_BYTES, null);
      const last = bytesRead === 0;
      const text = carry + (last ? decoder.end() : decoder.write(buffer.subarray(0, bytesRead)));
      const piece = redactor.redactPrefix(text, last ? text.length : Math.max(0, text.length - overlap));
      replaced += piece.replaced;
      // a file that is not UTF-8 comes out with U+FFFD for its invalid bytes: only when it held a secret
      await target.write(piece.text);
      carry = text.slice(piece.consumed);
      if (last) break;
    }
    await target.close();
    target = undefined;
    if (replaced === 0) return false;
    await rename(temporary, path);
    renamed = true;
    return true;
  } finally {
    await source.close();
    await target?.close();
    // the copy not renamed: no secret was in the file, or the rewrite failed part way
    if (created && !renamed) await rm(temporary, { force: true });
  }
}

/**
 * Replaces the file at `path` by `content` (its redacted text, for a file small enough to be in hand
 * whole): written beside it and renamed over it, so a link at `path` is replaced, never written through.
 * Synchronously, as a run's other small files are (docs/architecture.md).
 */
export function replaceFileSync(path: string, content: Buffer): void {
  const temporary = temporaryOf(path);
  try {
    writeFileSync(temporary, content, { flag: "wx" });
    renameSync(temporary, path);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
}

function temporaryOf(path: string): string {
  return `${path}.redacting`;
}
