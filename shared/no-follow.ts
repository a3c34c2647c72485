import {
  closeSync,
  constants,
  type Dirent,
  fstatSync,
  openSync,
  readdirSync,
  readSync,
  type Stats,
  unlinkSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";

/**
 * Files of a run that someone else may have written: a sandbox container's user, a setup step's
 * process, the agent. Nothing here follows a symbolic link or blocks on a FIFO, and a tree is
 * walked through open directories (openat(2) by way of /proc/self/fd, which Node lacks), so an
 * ancestor swapped for a link mid-walk cannot lead outside it.
 */

const { O_RDONLY, O_NOFOLLOW, O_NONBLOCK, O_WRONLY, O_CREAT, O_EXCL } = constants;
/** reading never follows a link, and opening a FIFO or a device does not wait for its other end */
const READ = O_RDONLY | O_NOFOLLOW | O_NONBLOCK;

/** `name` inside the directory open as `dirFd`, as open(2) resolves it: the directory is the fd's, whatever its path is now. */
function under(dirFd: number, name: string): string {
  return `/proc/self/fd/${dirFd}/${name}`;
}

/** What a walk met that is neither a regular file nor a directory, or a file it could not open. */
export interface SkippedEntry {
  /** relative to the walk's root */
  path: string;
  kind: string;
}

export function kindOf(
  stats: Pick<Stats, "isSymbolicLink" | "isFIFO" | "isCharacterDevice" | "isBlockDevice" | "isSocket">,
): string {
  if (stats.isSymbolicLink()) return "symbolic link";
  if (stats.isFIFO()) return "FIFO";
  if (stats.isCharacterDevice() || stats.isBlockDevice()) return "device";
  if (stats.isSocket()) return "socket";
  return "special file";
}

export interface WalkVisitor {
  /** a directory (the root included) or a regular file, open for reading until `visit` returns */
  visit(fd: number, stats: Stats, path: string): void;
  skip?(entry: SkippedEntry): void;
}

/**
 * Every directory and regular file under `root` (the root first), each opened without following a
 * link and judged by fstat on what was opened; links, FIFOs, devices and sockets are skipped
 * before they are opened (by their directory entry) and again after (by fstat), so one swapped in
 * between is still never read as a file. An entry gone meanwhile is passed over. Throws when the
 * root itself is not a directory it could open.
 */
export function walkNoFollow(root: string, visitor: WalkVisitor): void {
  const fd = openSync(root, READ | constants.O_DIRECTORY);
  try {
    const stats = fstatSync(fd);
    visitor.visit(fd, stats, "");
    walkOpen(fd, "", visitor);
  } finally {
    closeSync(fd);
  }
}

function walkOpen(dirFd: number, prefix: string, visitor: WalkVisitor): void {
  let entries: Dirent[];
  try {
    entries = readdirSync(under(dirFd, "."), { withFileTypes: true });
  } catch {
    return; // unreadable (removed meanwhile): nothing under it to visit
  }
  for (const entry of entries) {
    const path = prefix ? join(prefix, entry.name) : entry.name;
    if (!entry.isDirectory() && !entry.isFile()) {
      visitor.skip?.({ path, kind: kindOf(entry) });
      continue;
    }
    let fd: number;
    try {
      fd = openSync(under(dirFd, entry.name), READ);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      // ELOOP: a link swapped in since the listing; ENOENT: removed since
      if (code === "ELOOP") visitor.skip?.({ path, kind: "symbolic link" });
      else if (code !== "ENOENT") visitor.skip?.({ path, kind: `unreadable file (${code})` });
      continue;
    }
    try {
      const stats = fstatSync(fd);
      if (stats.isDirectory()) {
        visitor.visit(fd, stats, path);
        walkOpen(fd, path, visitor);
      } else if (stats.isFile()) visitor.visit(fd, stats, path);
      else visitor.skip?.({ path, kind: kindOf(stats) });
    } finally {
      closeSync(fd);
    }
  }
}

/**
 * A regular file opened for reading, or undefined (with why) when `path` is a link, a FIFO, a
 * device or absent: the caller reads the fd and closes it.
 */
export function openRegularFile(path: string): { fd: number; stats: Stats } | { skipped: string } {
  let fd: number;
  try {
    fd = openSync(path, READ);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return {
      skipped: code === "ELOOP" ? "symbolic link" : code === "ENOENT" ? "absent" : `unreadable (${code})`,
    };
  }
  const stats = fstatSync(fd);
  if (stats.isFile()) return { fd, stats };
  closeSync(fd);
  return { skipped: kindOf(stats) };
}

/** A regular file's text, or undefined when `path` is anything else (a link to a host file, a FIFO) or absent. */
export function readRegularFile(path: string): string | undefined {
  const opened = openRegularFile(path);
  if ("skipped" in opened) return undefined;
  try {
    const chunks: Buffer[] = [];
    const chunk = Buffer.allocUnsafe(64 * 1024);
    for (;;) {
      // position null: on from the fd's offset, so the loop reads the file once through
      const n = readSync(opened.fd, chunk, 0, chunk.length, null);
      if (n === 0) break;
      chunks.push(Buffer.from(chunk.subarray(0, n)));
    }
    return Buffer.concat(chunks).toString("utf8");
  } finally {
    closeSync(opened.fd);
  }
}

/**
 * Writes `data` as a new file at `path` with `mode`: whatever was there (a file, or a link someone
 * left to a host file) is unlinked first, and the file is created exclusively, so the write never
 * lands anywhere but in a file of its own.
 */
export function writeFreshFile(path: string, data: string | Buffer, mode = 0o600): void {
  try {
    unlinkSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  const fd = openSync(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode);
  try {
    const buffer = typeof data === "string" ? Buffer.from(data) : data;
    let written = 0;
    while (written < buffer.length) written += writeSync(fd, buffer, written);
  } finally {
    closeSync(fd);
  }
}
