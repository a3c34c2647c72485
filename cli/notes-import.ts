import { createHash } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { basename, join, relative } from "node:path";
import { parse as parseYaml } from "yaml";
import { insertNote, type NewNote } from "../db/notes.ts";
import type { Queryable } from "../db/queryable.ts";

/**
 * Legacy notes files (Markdown, optional `---` frontmatter with title, tags, pipeline, agent, repo,
 * date) into `svc.notes`. Each file is keyed by the SHA-256 of its content, so importing the same
 * directory again imports nothing; the files are only read, never moved or changed.
 */

export interface ImportSummary {
  imported: number;
  skipped: number;
  /** files that could not be read as notes: relative path and why */
  failed: { file: string; reason: string }[];
}

async function markdownFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory() && !entry.name.startsWith(".")) out.push(...(await markdownFiles(path)));
    else if (entry.isFile() && /\.(md|markdown)$/i.test(entry.name)) out.push(path);
  }
  return out.sort();
}

function optionalString(meta: Record<string, unknown>, key: string): string | null {
  const value = meta[key];
  if (value === undefined || value === null || value === "") return null;
  if (typeof value !== "string" && typeof value !== "number")
    throw new Error(`frontmatter "${key}" must be a string`);
  return String(value);
}

/** One file as a note; throws with the reason when its frontmatter is unusable. */
export function parseNoteFile(text: string, fileName: string): NewNote {
  let meta: Record<string, unknown> = {};
  let body = text;
  const match = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?/.exec(text);
  if (match) {
    const parsed: unknown = parseYaml(match[1]!);
    if (parsed !== null && (typeof parsed !== "object" || Array.isArray(parsed)))
      throw new Error("the frontmatter must be a mapping of keys such as title and tags");
    meta = (parsed as Record<string, unknown> | null) ?? {};
    body = text.slice(match[0].length);
  }
  body = body.trim();
  if (!body) throw new Error("the note has no body");
  const tags = meta.tags ?? [];
  if (!Array.isArray(tags) || tags.some((tag) => typeof tag !== "string"))
    throw new Error('frontmatter "tags" must be a list of strings, e.g. tags: [deploy, ci]');
  const heading = /^#\s+(.+)$/m.exec(body)?.[1]?.trim();
  const date = meta.date ?? meta.created_at;
  const createdAt = date instanceof Date ? date : typeof date === "string" ? new Date(date) : undefined;
  if (createdAt && Number.isNaN(createdAt.getTime()))
    throw new Error(`frontmatter "date" is not a date: ${String(date)}`);
  return {
    invocationId: null,
    title: optionalString(meta, "title") ?? heading ?? basename(fileName).replace(/\.(md|markdown)$/i, ""),
    body,
    tags: tags as string[],
    pipeline: optionalString(meta, "pipeline"),
    agent: optionalString(meta, "agent"),
    repo: optionalString(meta, "repo"),
    importDigest: createHash("sha256").update(text, "utf8").digest("hex"),
    ...(createdAt ? { createdAt } : {}),
  };
}

/** Imports every Markdown file under `dir`; `progress` hears about each file. */
export async function importNotes(
  db: Queryable,
  dir: string,
  progress: (line: string) => void = () => {},
): Promise<ImportSummary> {
  const summary: ImportSummary = { imported: 0, skipped: 0, failed: [] };
  for (const path of await markdownFiles(dir)) {
    const file = relative(dir, path);
    let note: NewNote;
    try {
      note = parseNoteFile(await readFile(path, "utf8"), file);
    } catch (error) {
      summary.failed.push({ file, reason: (error as Error).message });
      progress(`failed   ${file}: ${(error as Error).message}`);
      continue;
    }
    const row = await insertNote(db, note);
    if (row) summary.imported += 1;
    else summary.skipped += 1;
    progress(`${row ? "imported" : "skipped "} ${file}${row ? ` as ${row.id}` : " (already imported)"}`);
  }
  return summary;
}
