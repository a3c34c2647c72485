import { mkdir } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { type ProcessResult, runProcess } from "./run-process.ts";

/** The oldest qmd svc runs with: older releases lack `search --json` as svc reads it. */
export const RETRIEVAL_TOOL_FLOOR = "2.8.3";
/** The qmd collection svc indexes the knowledge directory into. */
const COLLECTION = "knowledge";
const VERSION_TIMEOUT_MS = 15_000;
const SEARCH_TIMEOUT_MS = 30_000;
const INDEX_TIMEOUT_MS = 30 * 60_000;

/** How svc runs qmd: the bundled one through Node 24, or the operator's executable as is. */
export interface QmdCommand {
  argv: string[];
  /** shown in messages */
  display: string;
}

export function resolveQmd(bin: string | undefined): QmdCommand {
  if (bin) return { argv: [bin], display: bin };
  try {
    const require = createRequire(import.meta.url);
    const packageDir = dirname(require.resolve("@tobilu/qmd/package.json"));
    const script = join(packageDir, "bin", "qmd");
    // qmd's native modules are built for the Node that installed them, which is the one running svc
    return { argv: [process.execPath, script], display: script };
  } catch {
    return { argv: ["qmd"], display: "qmd (not installed with svc)" };
  }
}

export class RetrievalToolError extends Error {}

/** How to fix a missing or old qmd, used by the boot check and `svc doctor`. */
export function floorFix(bin: string | undefined): string {
  return bin
    ? `install @tobilu/qmd ${RETRIEVAL_TOOL_FLOOR} or later at "knowledge.retrieval.bin" (${bin}), or remove that key to use the qmd installed with svc`
    : `run "npm install" in the svc installation (it depends on @tobilu/qmd >=${RETRIEVAL_TOOL_FLOOR}), or point "knowledge.retrieval.bin" at a qmd ${RETRIEVAL_TOOL_FLOOR} or later`;
}

/**
 * `qmd --version` compared with the floor. Missing, unrunnable or older → RetrievalToolError whose
 * message names the floor and the fix; the caller refuses to start.
 */
export async function checkQmdVersion(qmd: QmdCommand, bin: string | undefined): Promise<string> {
  const result = await runProcess([...qmd.argv, "--version"], {
    env: { ...process.env },
    timeoutMs: VERSION_TIMEOUT_MS,
  });
  const prefix = `knowledge: the retrieval tool qmd ${RETRIEVAL_TOOL_FLOOR} or later is required because knowledge sources were found`;
  if (result.spawnError || result.code !== 0) {
    const why = result.spawnError
      ? result.spawnError === "ENOENT"
        ? "it is missing"
        : `it cannot start (${result.spawnError})`
      : `"qmd --version" failed (${firstLine(result.stderr) || `exit ${result.code}`})`;
    throw new RetrievalToolError(`${prefix}, but ${why} at ${qmd.display} - ${floorFix(bin)}`);
  }
  const version = /(\d+)\.(\d+)\.(\d+)/.exec(result.stdout)?.[0];
  if (!version) {
    throw new RetrievalToolError(
      `${prefix}, but ${qmd.display} did not report a version ("${firstLine(result.stdout)}") - ${floorFix(bin)}`,
    );
  }
  if (compareVersions(version, RETRIEVAL_TOOL_FLOOR) < 0) {
    throw new RetrievalToolError(`${prefix}, but ${qmd.display} is ${version} - ${floorFix(bin)}`);
  }
  return version;
}

export function compareVersions(a: string, b: string): number {
  const pa = a.split(".").map(Number);
  const pb = b.split(".").map(Number);
  for (let i = 0; i < 3; i++) {
    const diff = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (diff !== 0) return diff;
  }
  return 0;
}

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
  qmd: QmdCommand,
  indexDir: string,
  args: string[],
  timeoutMs: number,
  onLine?: (line: string) => void,
): Promise<ProcessResult> {
  const result = await runProcess([...qmd.argv, ...args], {
    env: qmdEnv(indexDir),
    cwd: indexDir,
    timeoutMs,
    onLine,
  });
  if (result.spawnError || result.code !== 0 || result.timedOut) {
    const why = result.timedOut
      ? `timed out after ${timeoutMs} ms`
      : (result.spawnError ?? (firstLine(result.stderr) || `exit ${result.code}`));
    throw new Error(`qmd ${args[0]} failed: ${why}`);
  }
  return result;
}

/** Indexes `sourceDir` (its Markdown files) into a fresh index at `indexDir`. */
export async function buildQmdIndex(
  qmd: QmdCommand,
  indexDir: string,
  sourceDir: string,
  onLine?: (line: string) => void,
): Promise<void> {
  await mkdir(indexDir, { recursive: true });
  await runQmd(
    qmd,
    indexDir,
    ["collection", "add", sourceDir, "--name", COLLECTION, "--mask", "**/*.md"],
    INDEX_TIMEOUT_MS,
    onLine,
  );
}

export interface QmdHit {
  /** relative to the knowledge directory */
  file: string;
  line: number;
  title: string;
  snippet: string;
  /** BM25 over the query's terms, mapped to [0, 1) as qmd does: |bm25| / (1 + |bm25|) */
  score: number;
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
 * `vec:` lines, no reranking). qmd reports each term's FTS5 BM25 score; BM25 is a sum over terms,
 * so the raw per-term scores are added back up and mapped to [0, 1) the way `qmd search` maps them.
 */
export async function searchQmd(
  qmd: QmdCommand,
  indexDir: string,
  terms: readonly string[],
  limit: number,
): Promise<QmdHit[]> {
  if (terms.length === 0) return [];
  const document = terms.map((term) => `lex: ${term}`).join("\n");
  const result = await runQmd(
    qmd,
    indexDir,
    ["query", document, "--json", "--no-rerank", "--explain", "-n", String(limit), "-c", COLLECTION],
    SEARCH_TIMEOUT_MS,
  );
  const rows = parseJsonArray(result.stdout) as QmdQueryRow[];
  const hits = rows.map((row): QmdHit => {
    let raw = 0;
    for (const part of row.explain?.rrf?.contributions ?? []) {
      if (part.source !== "fts" || typeof part.backendScore !== "number") continue;
      const s = Math.min(part.backendScore, 0.999999);
      raw += s / (1 - s);
    }
    return {
      file: row.file.replace(/^qmd:\/\/[^/]+\//, ""),
      line: row.line ?? 1,
      title: row.title ?? "",
      snippet: cleanSnippet(row.snippet ?? ""),
      score: raw / (1 + raw),
    };
  });
  return hits.sort((a, b) => b.score - a.score);
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

/** Drops qmd's diff-style `@@ -3,4 @@ (2 before, 0 after)` header line. */
function cleanSnippet(snippet: string): string {
  return snippet
    .split("\n")
    .filter((line) => !/^@@ .* @@/.test(line))
    .join("\n")
    .trim();
}

function firstLine(text: string): string {
  return text.trim().split("\n")[0]?.slice(0, 200) ?? "";
}
