import { chmod, copyFile, mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { Knowledge, Passage, RetrievalMethod } from "./service.ts";
import type { SourceDocument } from "./sources.ts";

/** How much of the prompt the `## Knowledge` section may take. */
export const PROMPT_BUDGET_CHARS = 6_000;

/**
 * The `## Knowledge` section: the passages best first, each under its source path and line,
 * cut off at the character budget (a passage that does not fit whole is shortened, then nothing more).
 */
export function knowledgeSection(passages: readonly Passage[], budget = PROMPT_BUDGET_CHARS): string {
  if (passages.length === 0) return "";
  const parts = ["## Knowledge\n\nPassages from the team's documents, most relevant first:"];
  let used = parts[0]!.length;
  for (const passage of passages) {
    const header = `\n\n### ${passage.path}:${passage.line}\n\n`;
    const room = budget - used - header.length;
    if (room <= 40) break;
    const text = passage.text.length > room ? `${passage.text.slice(0, room - 3)}...` : passage.text;
    parts.push(header + text);
    used += header.length + text.length;
  }
  return parts.join("");
}

/** `file` and `browse`: the sources copied read-only to `RUN_DIR/knowledge/`, paths kept. */
export async function copySources(documents: readonly SourceDocument[], runDir: string): Promise<void> {
  for (const doc of documents) {
    const target = join(runDir, doc.path);
    await mkdir(dirname(target), { recursive: true });
    await copyFile(doc.absolute, target);
    await chmod(target, 0o444);
  }
}

/** `browse`: `RUN_DIR/knowledge/CATALOG.md`, one entry per document: title, path, first line. */
export async function writeCatalog(knowledge: Pick<Knowledge, "list">, runDir: string): Promise<string> {
  const documents = await knowledge.list();
  const lines = [
    "# Knowledge catalogue",
    "",
    "Read a document with the read_knowledge tool (by path) or from the file next to this one.",
    "",
    ...documents.map((doc) => `- **${doc.title}** — \`${doc.path}\` — ${doc.firstLine}`),
    "",
  ];
  const file = join(runDir, "knowledge", "CATALOG.md");
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, lines.join("\n"));
  return file;
}

/** The `search_knowledge` read tool: passages for a query, as the agent sees them. */
export async function searchKnowledge(
  knowledge: Knowledge,
  input: { query: string; topK?: number; method?: RetrievalMethod },
): Promise<{ method: RetrievalMethod; passages: Passage[] }> {
  const result = await knowledge.search(input.query, {
    method: input.method ?? "bm25",
    ...(input.topK !== undefined ? { topK: input.topK } : {}),
  });
  return { method: result.methodUsed, passages: result.passages };
}

/** The `read_knowledge` read tool: one document by the path the catalogue gives. */
export async function readKnowledge(
  knowledge: Knowledge,
  input: { path: string },
): Promise<{ path: string; text: string } | { error: string }> {
  const text = await knowledge.read(input.path);
  if (text === undefined) {
    return { error: `no knowledge document ${JSON.stringify(input.path)} - use a path from CATALOG.md` };
  }
  return { path: input.path, text };
}
