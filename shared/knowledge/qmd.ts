import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildWithCli, cliReader } from "./qmd-cli.ts";
import { firstLine, type IndexReader } from "./qmd-hits.ts";
import { buildWithLibrary, openLibraryReader } from "./qmd-library.ts";
import { runProcess } from "./run-process.ts";

export type { IndexReader, QmdHit } from "./qmd-hits.ts";

/** The oldest qmd svc runs with: older releases lack the search semantics svc relies on. */
export const RETRIEVAL_TOOL_FLOOR = "2.8.3";
const VERSION_TIMEOUT_MS = 15_000;
const PACKAGE = "@tobilu/qmd";

/**
 * Which qmd svc uses: the one installed with svc, in-process, or the operator's
 * `knowledge.retrieval.bin`, run as an executable. `missing` when svc's own copy is not installed.
 */
export type QmdTool =
  | { kind: "library"; display: string; version: string }
  | { kind: "cli"; bin: string; display: string }
  | { kind: "missing"; display: string; why: string };

/**
 * Finds the bundled package by its entry point (the package exports only `.`, so a
 * `package.json` subpath cannot be resolved) and reads its version beside it.
 */
export function resolveQmd(bin: string | undefined): QmdTool {
  if (bin) return { kind: "cli", bin, display: bin };
  let entry: string;
  try {
    entry = fileURLToPath(import.meta.resolve(PACKAGE));
  } catch (error) {
    return { kind: "missing", display: `${PACKAGE} (not installed with svc)`, why: (error as Error).message };
  }
  for (let dir = dirname(entry); dir !== dirname(dir); dir = dirname(dir)) {
    try {
      const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as {
        name?: string;
        version?: string;
      };
      if (manifest.name === PACKAGE)
        return { kind: "library", display: dir, version: manifest.version ?? "" };
    } catch {
      // no package.json at this level: keep walking up towards the package root
    }
  }
  return { kind: "missing", display: entry, why: "its package.json was not found" };
}

export class RetrievalToolError extends Error {}

/** How to fix a missing or old qmd, used by the boot check and `svc doctor`. */
export function floorFix(bin: string | undefined): string {
  return bin
    ? `install @tobilu/qmd ${RETRIEVAL_TOOL_FLOOR} or later at "knowledge.retrieval.bin" (${bin}), or remove that key to use the qmd installed with svc`
    : `reinstall svc (it depends on @tobilu/qmd >=${RETRIEVAL_TOOL_FLOOR}), or point "knowledge.retrieval.bin" at a qmd ${RETRIEVAL_TOOL_FLOOR} or later`;
}

/**
 * The version of the qmd svc will use, compared with the floor: the bundled package's own
 * version, or `--version` of the override. Missing, unrunnable or older → RetrievalToolError
 * whose message names the floor and the fix; the caller refuses to start.
 */
export async function checkQmdVersion(tool: QmdTool, bin: string | undefined): Promise<string> {
  const prefix = `knowledge: the retrieval tool qmd ${RETRIEVAL_TOOL_FLOOR} or later is required because knowledge sources were found`;
  const refuse = (why: string) => new RetrievalToolError(`${prefix}, but ${why} - ${floorFix(bin)}`);
  let version: string | undefined;
  if (tool.kind === "missing") throw refuse(`it is missing at ${tool.display} (${tool.why})`);
  if (tool.kind === "library") version = /^\d+\.\d+\.\d+/.exec(tool.version)?.[0];
  else {
    const result = await runProcess([tool.bin, "--version"], {
      env: { ...process.env },
      timeoutMs: VERSION_TIMEOUT_MS,
    });
    if (result.spawnError || result.code !== 0) {
      throw refuse(
        result.spawnError
          ? `${result.spawnError === "ENOENT" ? "it is missing" : `it cannot start (${result.spawnError})`} at ${tool.display}`
          : `"qmd --version" failed (${firstLine(result.stderr) || `exit ${result.code}`}) at ${tool.display}`,
      );
    }
    version = /(\d+)\.(\d+)\.(\d+)/.exec(result.stdout)?.[0];
    if (!version) throw refuse(`${tool.display} did not report a version ("${firstLine(result.stdout)}")`);
  }
  if (!version) throw refuse(`${tool.display} has no version in its package.json`);
  if (compareVersions(version, RETRIEVAL_TOOL_FLOOR) < 0) throw refuse(`${tool.display} is ${version}`);
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

/** Indexes `sourceDir` (its Markdown files) into a fresh index at `indexDir`. */
export function buildQmdIndex(tool: QmdTool, indexDir: string, sourceDir: string): Promise<void> {
  if (tool.kind === "cli") return buildWithCli(tool.bin, indexDir, sourceDir);
  if (tool.kind === "library") return buildWithLibrary(indexDir, sourceDir);
  return Promise.reject(new Error(`qmd is missing at ${tool.display}`));
}

/** Opens the index at `indexDir` for searching. */
export async function openQmdIndex(tool: QmdTool, indexDir: string): Promise<IndexReader> {
  if (tool.kind === "cli") return cliReader(tool.bin, indexDir);
  if (tool.kind === "library") return openLibraryReader(indexDir);
  throw new Error(`qmd is missing at ${tool.display}`);
}
