import type { Dirent } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import type { ConfigFile } from "./source.ts";

/** A configuration file's text, or why there is none. */
export type Text = { kind: "text"; text: string } | { kind: "missing" } | { kind: "error"; reason: string };

export async function readText(dir: string, file: string): Promise<Text> {
  try {
    return { kind: "text", text: await readFile(join(dir, file), "utf8") };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return { kind: "missing" };
    return { kind: "error", reason: code ?? "read error" };
  }
}

/** A file that exists but cannot be read: the problem names the error code and the fix. */
export function reportUnreadable(f: ConfigFile, reason: string): void {
  f.report([], "file_unreadable", `cannot be read (${reason}) - check its permissions`);
}

/** The text of a file a directory listing found, or undefined once its read failure is reported. */
export async function readOrReport(f: ConfigFile, dir: string, file: string): Promise<string | undefined> {
  const text = await readText(dir, file);
  if (text.kind === "text") return text.text;
  // listed a moment ago: a file gone since is reported as unreadable, with its error code
  reportUnreadable(f, text.kind === "missing" ? "ENOENT" : text.reason);
  return undefined;
}

/** A subdirectory's entries in name order; a missing one has none. */
export async function list(dir: string, sub: string): Promise<Dirent[]> {
  try {
    const entries = await readdir(join(dir, sub), { withFileTypes: true });
    return entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  } catch {
    // every such directory is optional: one that is absent configures nothing
    return [];
  }
}

/**
 * Files are read concurrently and land in completion order; put the record back in name order so
 * the snapshot, and every message that lists its names, is the same on every machine.
 */
export function inNameOrder<T>(record: Record<string, T>): void {
  const entries = Object.entries(record).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  for (const [key] of entries) delete record[key];
  for (const [key, value] of entries) record[key] = value;
}
