import { readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { DEFAULT_VECTOR_URL } from "../config/knowledge.ts";
import type { ConfigSnapshot } from "../config/types.ts";
import type { Logger } from "../logger.ts";
import { buildVectorIndex } from "./chroma.ts";
import { EmbedderError } from "./embedder.ts";
import { type IndexState, readIndexState, withIndexLock, writeIndexState } from "./index-state.ts";
import { buildQmdIndex, type QmdTool } from "./qmd.ts";
import { discoverSources, knowledgeRoot, type SourceDocument, sourceHash } from "./sources.ts";

export class KnowledgeIndexError extends Error {}

export interface IndexBuildInput {
  config: Pick<ConfigSnapshot, "dir" | "knowledge">;
  logger: Logger;
  qmd: QmdTool;
  dataDir: string;
  /** rebuild even when the sources did not change (`svc knowledge reindex`) */
  force: boolean;
  progress?: (line: string) => void;
}

export function vectorUrl(config: Pick<ConfigSnapshot, "knowledge">): string {
  return config.knowledge.retrieval.url ?? DEFAULT_VECTOR_URL;
}

/** the engine settings are part of the hash: switching engines rebuilds */
function indexHash(config: IndexBuildInput["config"], documents: readonly SourceDocument[]): string {
  const { engine } = config.knowledge.retrieval;
  return `${sourceHash(documents)}:${engine}${engine === "vector" ? `:${vectorUrl(config)}` : ""}`;
}

/**
 * The index for the current sources: the existing one when its hash matches, else a new build.
 * Under the data directory's lock, and re-read under it: another process of this host may have
 * just built it.
 */
export function ensureIndex(
  input: IndexBuildInput,
): Promise<{ state: IndexState; documents: SourceDocument[] }> {
  return withIndexLock(
    input.dataDir,
    async () => {
      const documents = await discoverSources(input.config.dir);
      const hash = indexHash(input.config, documents);
      const previous = await readIndexState(input.dataDir);
      if (!input.force && previous?.hash === hash) return { state: previous, documents };
      return { state: await build(input, documents, hash, previous), documents };
    },
    (owner) => {
      const message = `knowledge index: waiting for the build by process ${owner.pid} instead of building again`;
      input.logger.info(message, { event: "knowledge.index_wait", pid: owner.pid });
      input.progress?.(message);
    },
  );
}

async function build(
  input: IndexBuildInput,
  documents: SourceDocument[],
  hash: string,
  previous: IndexState | undefined,
): Promise<IndexState> {
  const { engine } = input.config.knowledge.retrieval;
  const started = Date.now();
  const say = (message: string, fields: Record<string, unknown> = {}) => {
    input.logger.info(message, { event: "knowledge.index", ...fields });
    input.progress?.(message);
  };
  say(`knowledge index: indexing ${documents.length} documents (${engine} engine)`, {
    documents: documents.length,
    engine,
  });
  const stamp = `${Date.now().toString(36)}-${hash.slice(0, 12)}`;
  const qmdDir = `qmd-${stamp}`;
  try {
    await buildQmdIndex(input.qmd, join(input.dataDir, qmdDir), knowledgeRoot(input.config.dir));
  } catch (error) {
    throw new KnowledgeIndexError(`knowledge index: ${(error as Error).message}`);
  }
  const collection = engine === "vector" ? `svc-knowledge-${stamp}` : undefined;
  if (collection) await buildVectors(input, documents, collection, say);
  const state: IndexState = {
    hash,
    indexedAt: new Date().toISOString(),
    qmdDir,
    ...(collection ? { collection } : {}),
    documents: documents.map((doc) => ({ path: doc.path, size: doc.size })),
  };
  await writeIndexState(input.dataDir, state);
  await removeOldIndexes(input.dataDir, [qmdDir, previous?.qmdDir]);
  say(`knowledge index: ${documents.length} documents indexed in ${Date.now() - started} ms`, {
    documents: documents.length,
    ms: Date.now() - started,
  });
  return state;
}

async function buildVectors(
  input: IndexBuildInput,
  documents: SourceDocument[],
  collection: string,
  say: (message: string, fields?: Record<string, unknown>) => void,
): Promise<void> {
  const url = vectorUrl(input.config);
  try {
    await buildVectorIndex({
      url,
      embedder: input.config.knowledge.retrieval.embedder ?? "",
      collection,
      sources: documents,
      onProgress: (done, total) =>
        say(`knowledge index: embedded ${done}/${total} passages`, { done, total }),
    });
  } catch (error) {
    if (error instanceof EmbedderError) throw new KnowledgeIndexError(error.message);
    throw new KnowledgeIndexError(
      `knowledge index: the vector store at ${url} failed: ${(error as Error).message} - start it (docker compose --profile vector up -d chroma) or set "knowledge.retrieval.url"`,
    );
  }
}

/** keeps the current and the previous index: a process started before a reindex still reads it */
async function removeOldIndexes(dataDir: string, keep: (string | undefined)[]): Promise<void> {
  const entries = await readdir(dataDir).catch(() => [] as string[]);
  for (const entry of entries) {
    if (entry.startsWith("qmd-") && !keep.includes(entry))
      await rm(join(dataDir, entry), { recursive: true, force: true });
  }
}
