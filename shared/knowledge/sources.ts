import { createHash } from "node:crypto";
import type { Dirent } from "node:fs";
import { readdir, readFile, stat } from "node:fs/promises";
import { join, relative, sep } from "node:path";

/** The knowledge sources of a configuration directory: every Markdown file under `knowledge/`. */
export const KNOWLEDGE_DIR = "knowledge";

export interface SourceDocument {
  /** relative to the configuration directory, `/`-separated: `knowledge/runbook.md` */
  path: string;
  absolute: string;
  size: number;
  mtimeMs: number;
}

export interface DocumentSummary {
  path: string;
  /** the first heading, else the file name */
  title: string;
  /** the first non-empty line that is not the title heading */
  firstLine: string;
  size: number;
}

export function knowledgeRoot(configDir: string): string {
  return join(configDir, KNOWLEDGE_DIR);
}

/** Where svc keeps its indexes: `<config dir>/data/knowledge/`, never the user's home. */
export function knowledgeDataDir(configDir: string): string {
  return join(configDir, "data", "knowledge");
}

/** Markdown files under `<config dir>/knowledge/`, in path order; hidden files and directories are skipped. */
export async function discoverSources(configDir: string): Promise<SourceDocument[]> {
  const root = knowledgeRoot(configDir);
  const found: SourceDocument[] = [];
  const walk = async (dir: string): Promise<void> => {
    let entries: Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (error) {
      // no knowledge directory is the common case: no documents
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
      throw error;
    }
    for (const entry of entries) {
      if (entry.name.startsWith(".")) continue;
      const absolute = join(dir, entry.name);
      if (entry.isDirectory()) await walk(absolute);
      else if (entry.isFile() && entry.name.endsWith(".md")) {
        const info = await stat(absolute);
        const path = relative(configDir, absolute).split(sep).join("/");
        found.push({ path, absolute, size: info.size, mtimeMs: info.mtimeMs });
      }
    }
  };
  await walk(root);
  return found.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** Changes whenever a document is added, removed, renamed or modified: the index is rebuilt then. */
export function sourceHash(sources: readonly SourceDocument[]): string {
  const hash = createHash("sha256");
  for (const source of sources) hash.update(`${source.path}\0${source.size}\0${source.mtimeMs}\n`);
  return hash.digest("hex");
}

export async function summarize(source: SourceDocument): Promise<DocumentSummary> {
  const text = await readFile(source.absolute, "utf8");
  return { path: source.path, size: source.size, ...titleAndFirstLine(text, source.path) };
}

export function titleAndFirstLine(text: string, path: string): { title: string; firstLine: string } {
  const lines = text.split("\n").map((line) => line.trim());
  const heading = lines.find((line) => /^#{1,6}\s+\S/.test(line));
  const title = heading ? heading.replace(/^#{1,6}\s+/, "") : (path.split("/").pop() ?? path);
  const firstLine = lines.find((line) => line !== "" && line !== heading && !line.startsWith("---")) ?? "";
  return { title, firstLine };
}
