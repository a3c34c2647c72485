import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import type { IndexReader, QmdHit } from "./qmd-hits.ts";
import { COLLECTION, cleanSnippet, firstLine, fromRawScore, toRawScore } from "./qmd-hits.ts";
import { type ProcessResult, runProcess } from "./run-process.ts";

/**
 * qmd as an executable: only for a `knowledge.retrieval.bin` override. The qmd installed with svc
 * runs in-process (qmd-library.ts); an operator's own build is run as a child per call.
 */
const SEARCH_TIMEOUT_MS = 30_000;
const INDEX_TIMEOUT_MS = 30 * 60_000;

/**
 * qmd keeps its index, configuration and caches where these variables say: all under `indexDir`,
 * so it never writes to the user's home or reads someone else's project-local `.qmd`.
 */
function qmdEnv(indexDir: string): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: indexDir,
    INDEX_PATH: join(indexDir, "index.sqlite"),
    QMD_CONFIG_DIR: join(indexDir, "config"),
    XDG_CONFIG_HOME: join(indexDir, "config"),
    XDG_CACHE_HOME: join(indexDir, "cache"),
    NO_COLOR: "1",
  };
}

async function runQmd(
  bin: string,
  indexDir: string,
  args: string[],
  timeoutMs: number,
): Promise<ProcessResult> {
  const result = await runProcess([bin, ...args], { env: qmdEnv(indexDir), cwd: indexDir, timeoutMs });
  if (result.spawnError || result.code !== 0 || result.timedOut) {
    const why = result.timedOut
      ? `timed out after ${timeoutMs} ms`
      : (result.spawnError ?? (firstLine(result.stderr) || `exit ${result.code}`));
    throw new Error(`qmd ${args[0]} failed: ${why}`);
  }
  return result;
}

/** Indexes `sourceDir` (its Markdown files) into a fresh index at `indexDir`. */
export async function buildWithCli(bin: string, indexDir: string, sourceDir: string): Promise<void> {
  await mkdir(indexDir, { recursive: true });
  await runQmd(
    bin,
    indexDir,
    ["collection", "add", sourceDir, "--name", COLLECTION, "--mask", "**/*.md"],
    INDEX_TIMEOUT_MS,
  );
}

interface QmdQueryRow {
  file: string;
  line?: number;
  title?: string;
  snippet?: string;
  explain?: { rrf?: { contributions?: { source?: string; backendScore?: number }[] } };
}

/**
 * BM25 with any-term semantics: one `lex:` line per term in a single `qmd query` (no model: no
 * `vec:` lines, no reranking). qmd reports each term's score; they are added back up as raw BM25.
 */
export function cliReader(bin: string, indexDir: string): IndexReader {
  return {
    async search(terms, limit): Promise<QmdHit[]> {
      if (terms.length === 0) return [];
      const document = terms.map((term) => `lex: ${term}`).join("\n");
      const result = await runQmd(
        bin,
        indexDir,
        ["query", document, "--json", "--no-rerank", "--explain", "-n", String(limit), "-c", COLLECTION],
        SEARCH_TIMEOUT_MS,
      );
      const rows = parseJsonArray(result.stdout) as QmdQueryRow[];
      const hits = rows.map((row): QmdHit => {
        let raw = 0;
        for (const part of row.explain?.rrf?.contributions ?? []) {
          if (part.source === "fts" && typeof part.backendScore === "number")
            raw += toRawScore(part.backendScore);
        }
        return {
          file: row.file.replace(/^qmd:\/\/[^/]+\//, ""),
          line: row.line ?? 1,
          title: row.title ?? "",
          snippet: cleanSnippet(row.snippet ?? ""),
          score: fromRawScore(raw),
        };
      });
      return hits.sort((a, b) => b.score - a.score);
    },
    async close() {},
  };
}

/** qmd prints its JSON after progress lines on some paths: take the array. */
function parseJsonArray(text: string): unknown[] {
  const start = text.indexOf("[");
  if (start < 0) return [];
  try {
    const value = JSON.parse(text.slice(start));
    return Array.isArray(value) ? value : [];
  } catch {
    throw new Error(`qmd answered something other than JSON: ${firstLine(text)}`);
  }
}
