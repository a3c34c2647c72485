import { readFile } from "node:fs/promises";
import type { SourceDocument } from "./sources.ts";

export interface Chunk {
  /** `<path>#<line>`: unique, stable while the file is unchanged */
  id: string;
  path: string;
  /** 1-based line where the passage starts */
  line: number;
  text: string;
}

const TARGET_CHARS = 800;

/** Passages for the vector engine: paragraphs joined up to about 800 characters, each with its first line. */
export async function chunkDocument(source: SourceDocument): Promise<Chunk[]> {
  return chunkText(source.path, await readFile(source.absolute, "utf8"));
}

export function chunkText(path: string, text: string): Chunk[] {
  const lines = text.split("\n");
  const chunks: Chunk[] = [];
  let start = -1;
  let buffer: string[] = [];
  const flush = () => {
    const body = buffer.join("\n").trim();
    if (body) chunks.push({ id: `${path}#${start + 1}`, path, line: start + 1, text: body });
    buffer = [];
    start = -1;
  };
  lines.forEach((line, index) => {
    const heading = /^#{1,6}\s/.test(line);
    const size = buffer.reduce((sum, l) => sum + l.length + 1, 0);
    if ((heading && size > 0) || (line.trim() === "" && size >= TARGET_CHARS)) flush();
    if (line.trim() === "" && start < 0) return;
    if (start < 0) start = index;
    buffer.push(line);
  });
  flush();
  return chunks;
}

/**
 * The passage of a document to show for a search: the chunk holding most of the terms (as word
 * prefixes, the way qmd matches them), ties going to the chunk around qmd's best line, then the first.
 */
export function bestChunk(
  chunks: readonly Chunk[],
  terms: readonly string[],
  line: number,
): Chunk | undefined {
  let best: Chunk | undefined;
  let bestScore = -1;
  for (const [index, chunk] of chunks.entries()) {
    const words = chunk.text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
    const matched = terms.filter((term) => words.some((word) => word.startsWith(term))).length;
    const next = chunks[index + 1];
    const holdsLine = chunk.line <= line && (!next || next.line > line);
    const score = matched * 2 + (holdsLine ? 1 : 0);
    if (score > bestScore) {
      best = chunk;
      bestScore = score;
    }
  }
  return best;
}
