import { readFile } from "node:fs/promises";
import { join, normalize } from "node:path";
import type { ConfigSnapshot } from "../config/types.ts";
import type { Logger } from "../logger.ts";
import { queryVectorIndex } from "./chroma.ts";
import { bestChunk, type Chunk, chunkText } from "./chunks.ts";
import { ensureIndex, KnowledgeIndexError, vectorUrl } from "./index-build.ts";
import { type IndexState, readIndexState, stateModifiedAt } from "./index-state.ts";
import { searchTerms } from "./keywords.ts";
import { checkQmdVersion, type IndexReader, openQmdIndex, type QmdTool, resolveQmd } from "./qmd.ts";
import { reciprocalRankFusion } from "./rrf.ts";
import {
  type DocumentSummary,
  discoverSources,
  knowledgeDataDir,
  type SourceDocument,
  summarize,
} from "./sources.ts";

export type RetrievalMethod = "bm25" | "hybrid";

export const DEFAULT_TOP_K = 5;
export const DEFAULT_MIN_SCORE = 0;

export interface Passage {
  /** relative to the configuration directory: `knowledge/runbook.md` */
  path: string;
  line: number;
  score: number;
  title: string;
  text: string;
}

export interface SearchResult {
  passages: Passage[];
  /** what actually ran: `hybrid` asked without vectors available serves `bm25` */
  methodUsed: RetrievalMethod;
}

export interface SearchOptions {
  method: RetrievalMethod;
  topK?: number;
  minScore?: number;
}

export { KnowledgeIndexError };

/** How long a replaced index stays open for searches already running on it. */
const RETIRE_MS = 30_000;

async function closeQuietly(reader: Promise<IndexReader>): Promise<void> {
  try {
    await (await reader).close();
  } catch {
    // an index that failed to open, or is already closed, holds nothing to release
  }
}

type KnowledgeConfig = Pick<ConfigSnapshot, "dir" | "knowledge">;

/**
 * The team's documents under `<config dir>/knowledge/`, indexed by qmd (and by Chroma with the
 * vector engine) under `<config dir>/data/knowledge/`. `open` is the boot step of every role
 * that retrieves: with documents present it checks qmd's version floor and rebuilds the index
 * when the sources changed; errors are fatal to start-up.
 */
export class Knowledge {
  readonly #config: KnowledgeConfig;
  readonly #logger: Logger;
  readonly #qmd: QmdTool;
  readonly #dataDir: string;
  #state: IndexState | undefined;
  #stateMtime = 0;
  /** the index this process searches, opened once; replaced when a build switches the state */
  #reader: { qmdDir: string; reader: Promise<IndexReader> } | undefined;
  #documents: SourceDocument[];
  #warnedNoVectors = false;
  /** the qmd version found at boot; undefined without documents */
  readonly toolVersion: string | undefined;

  private constructor(
    config: KnowledgeConfig,
    logger: Logger,
    documents: SourceDocument[],
    qmd: QmdTool,
    toolVersion: string | undefined,
  ) {
    this.#config = config;
    this.#logger = logger;
    this.#qmd = qmd;
    this.#dataDir = knowledgeDataDir(config.dir);
    this.#documents = documents;
    this.toolVersion = toolVersion;
  }

  static async open(
    config: KnowledgeConfig,
    logger: Logger,
    options: { force?: boolean; progress?: (line: string) => void } = {},
  ): Promise<Knowledge> {
    const documents = await discoverSources(config.dir);
    const bin = config.knowledge.retrieval.bin;
    const qmd = resolveQmd(bin);
    if (documents.length === 0) return new Knowledge(config, logger, documents, qmd, undefined);
    const version = await checkQmdVersion(qmd, bin);
    const knowledge = new Knowledge(config, logger, documents, qmd, version);
    const built = await ensureIndex({
      config,
      logger,
      qmd: knowledge.#qmd,
      dataDir: knowledge.#dataDir,
      force: options.force ?? false,
      ...(options.progress ? { progress: options.progress } : {}),
    });
    knowledge.#state = built.state;
    knowledge.#documents = built.documents;
    knowledge.#stateMtime = stateModifiedAt(knowledge.#dataDir);
    // opened at boot, so the first run or question does not pay for loading qmd
    await knowledge.#readerFor(built.state);
    return knowledge;
  }

  get documentCount(): number {
    return this.#documents.length;
  }

  get engine(): string {
    return this.#config.knowledge.retrieval.engine;
  }

  /** true when `hybrid` can fuse vectors: only the vector engine supplies them */
  get hasVectors(): boolean {
    return this.engine === "vector";
  }

  get indexedAt(): string | undefined {
    return this.#state?.indexedAt;
  }

  /** a `svc knowledge reindex` since boot moved the index: follow it */
  async #current(): Promise<IndexState | undefined> {
    const mtime = stateModifiedAt(this.#dataDir);
    if (mtime !== this.#stateMtime) {
      const state = await readIndexState(this.#dataDir);
      if (state) {
        this.#state = state;
        // the reindex may have seen documents added since boot, and read changed ones again
        this.#documents = await discoverSources(this.#config.dir);
        this.#chunkCache.clear();
      }
      this.#stateMtime = mtime;
    }
    return this.#state;
  }

  async search(query: string, options: SearchOptions): Promise<SearchResult> {
    const topK = options.topK ?? this.#config.knowledge.retrieval.topK ?? DEFAULT_TOP_K;
    const minScore = options.minScore ?? this.#config.knowledge.retrieval.minScore ?? DEFAULT_MIN_SCORE;
    const state = await this.#current();
    if (!state || this.#documents.length === 0) return { passages: [], methodUsed: options.method };
    const candidates = Math.max(topK * 4, 20);
    const terms = searchTerms(query);
    const hits = await (await this.#readerFor(state)).search(terms, candidates);
    const lexical: Passage[] = await Promise.all(
      hits.map(async (hit) => {
        const path = `knowledge/${hit.file}`;
        // qmd ranks documents; the passage shown is the section of the document that matches best,
        // cut from the text qmd indexed when it gives it, so a search reads no file
        const chunk = bestChunk(await this.#chunks(path, hit.text), terms, hit.line);
        return {
          path,
          line: chunk?.line ?? hit.line,
          score: hit.score,
          title: hit.title,
          text: chunk?.text ?? hit.snippet,
        };
      }),
    );
    let passages = lexical;
    let methodUsed: RetrievalMethod = "bm25";
    if (options.method === "hybrid") {
      const vectors = await this.#vectorPassages(state, query, candidates);
      if (vectors) {
        methodUsed = "hybrid";
        const toRanked = (list: Passage[]) => list.map((item) => ({ key: item.path, item }));
        passages = reciprocalRankFusion([toRanked(lexical), toRanked(vectors)]).map((fused) => ({
          ...fused.item,
          score: fused.score,
        }));
      }
    }
    return {
      passages: passages.filter((passage) => passage.score >= minScore).slice(0, topK),
      methodUsed,
    };
  }

  /**
   * The open index for `state`. After a switch the old one is closed a while later rather than at
   * once: a search that started on it finishes there.
   */
  #readerFor(state: IndexState): Promise<IndexReader> {
    if (this.#reader?.qmdDir === state.qmdDir) return this.#reader.reader;
    const old = this.#reader;
    if (old) setTimeout(() => void closeQuietly(old.reader), RETIRE_MS).unref();
    const reader = openQmdIndex(this.#qmd, join(this.#dataDir, state.qmdDir));
    this.#reader = { qmdDir: state.qmdDir, reader };
    // a failed open is tried again at the next search instead of being remembered
    reader.catch(() => {
      if (this.#reader?.reader === reader) this.#reader = undefined;
    });
    return reader;
  }

  /** Closes the open index; a later search opens it again. */
  async close(): Promise<void> {
    const current = this.#reader;
    this.#reader = undefined;
    if (current) await closeQuietly(current.reader);
  }

  /**
   * A document's sections, cut once per index: from the text the reader gave with the hit (qmd's
   * library), else from the file (a qmd executable gives snippets only). qmd answers from the
   * index, not the files, so the passages follow the index too, and are cut again after a switch
   * (#current clears this). At most one entry per document.
   */
  readonly #chunkCache = new Map<string, Promise<Chunk[]>>();

  #chunks(path: string, text?: string): Promise<Chunk[]> {
    const cached = this.#chunkCache.get(path);
    if (cached) return cached;
    if (text !== undefined) {
      const chunks = Promise.resolve(chunkText(path, text));
      this.#chunkCache.set(path, chunks);
      return chunks;
    }
    const doc = this.#documents.find((candidate) => candidate.path === path);
    if (!doc) return Promise.resolve([]);
    const chunks = readFile(doc.absolute, "utf8").then(
      (text) => chunkText(path, text),
      () => {
        // a file gone since the index was built has no sections; it is looked for again next time
        this.#chunkCache.delete(path);
        return [];
      },
    );
    this.#chunkCache.set(path, chunks);
    return chunks;
  }

  /** undefined when no vectors can be had: the caller serves BM25 and it is said once */
  async #vectorPassages(state: IndexState, query: string, limit: number): Promise<Passage[] | undefined> {
    if (!this.hasVectors || !state.collection) {
      this.#noVectors("the local engine has no vectors; set knowledge.retrieval.engine: vector for hybrid");
      return undefined;
    }
    try {
      const hits = await queryVectorIndex({
        url: vectorUrl(this.#config),
        embedder: this.#config.knowledge.retrieval.embedder ?? "",
        collection: state.collection,
        text: query,
        limit,
      });
      // one passage per document, its best chunk: the BM25 side ranks documents too
      const best = new Map<string, Passage>();
      for (const hit of hits) {
        if (best.has(hit.path)) continue;
        best.set(hit.path, { path: hit.path, line: hit.line, score: hit.score, title: "", text: hit.text });
      }
      return [...best.values()];
    } catch (error) {
      this.#noVectors(`the vector store cannot answer (${(error as Error).message})`);
      return undefined;
    }
  }

  #noVectors(reason: string): void {
    if (this.#warnedNoVectors) return;
    this.#warnedNoVectors = true;
    this.#logger.warn(`knowledge: hybrid retrieval has no vectors, serving BM25: ${reason}`, {
      event: "knowledge.hybrid_without_vectors",
      reason,
    });
  }

  /** The documents as indexed: path, title, size, when the index was built. */
  async list(): Promise<(DocumentSummary & { indexed_at: string | null })[]> {
    const state = await this.#current();
    const out = [];
    for (const doc of this.#documents) {
      out.push({ ...(await summarize(doc)), indexed_at: state?.indexedAt ?? null });
    }
    return out;
  }

  /** A document's text by its path (`knowledge/…`); undefined for anything outside the sources. */
  async read(path: string): Promise<string | undefined> {
    const wanted = normalize(path).replace(/^\.\//, "");
    const doc = this.#documents.find((candidate) => candidate.path === wanted);
    return doc ? readFile(doc.absolute, "utf8") : undefined;
  }

  get documents(): readonly SourceDocument[] {
    return this.#documents;
  }
}
