import { ChromaClient } from "chromadb";
import { type Chunk, chunkDocument } from "./chunks.ts";
import { embedTexts } from "./embedder.ts";
import type { SourceDocument } from "./sources.ts";

const BATCH = 64;

export interface VectorHit {
  path: string;
  line: number;
  text: string;
  /** cosine similarity mapped to [0, 1] */
  score: number;
}

function client(url: string): ChromaClient {
  const parsed = new URL(url);
  const ssl = parsed.protocol === "https:";
  return new ChromaClient({
    host: parsed.hostname,
    port: parsed.port ? Number(parsed.port) : ssl ? 443 : 80,
    ssl,
  });
}

/**
 * Embeds every passage with the host embedder runner and stores it in a fresh Chroma collection
 * named after the sources' hash (svc supplies the vectors: the collection has no embedding function).
 */
export async function buildVectorIndex(options: {
  url: string;
  embedder: string;
  collection: string;
  sources: readonly SourceDocument[];
  onProgress?: (done: number, total: number) => void;
}): Promise<number> {
  const chunks: Chunk[] = [];
  for (const source of options.sources) chunks.push(...(await chunkDocument(source)));
  // the embedder is checked before Chroma is touched: its message is the one an operator must see
  const first = await embedTexts(
    options.embedder,
    chunks.slice(0, BATCH).map((c) => c.text),
  );
  const chroma = client(options.url);
  await chroma.heartbeat();
  await chroma.deleteCollection({ name: options.collection }).catch(() => {
    // absent: nothing to replace
  });
  const collection = await chroma.createCollection({
    name: options.collection,
    embeddingFunction: null,
    configuration: { hnsw: { space: "cosine" } },
  });
  for (let offset = 0; offset < chunks.length; offset += BATCH) {
    const batch = chunks.slice(offset, offset + BATCH);
    const embeddings =
      offset === 0
        ? first
        : await embedTexts(
            options.embedder,
            batch.map((chunk) => chunk.text),
          );
    await collection.add({
      ids: batch.map((chunk) => chunk.id),
      embeddings,
      documents: batch.map((chunk) => chunk.text),
      metadatas: batch.map((chunk) => ({ path: chunk.path, line: chunk.line })),
    });
    options.onProgress?.(Math.min(offset + BATCH, chunks.length), chunks.length);
  }
  return chunks.length;
}

export async function queryVectorIndex(options: {
  url: string;
  embedder: string;
  collection: string;
  text: string;
  limit: number;
}): Promise<VectorHit[]> {
  const [vector] = await embedTexts(options.embedder, [options.text]);
  const chroma = client(options.url);
  const collection = await chroma.getCollection({ name: options.collection });
  const result = await collection.query({
    queryEmbeddings: [vector!],
    nResults: options.limit,
    include: ["documents", "metadatas", "distances"],
  });
  const ids = result.ids[0] ?? [];
  return ids.map((id, index) => {
    const metadata = result.metadatas[0]?.[index] ?? {};
    const distance = result.distances[0]?.[index] ?? 2;
    return {
      path: typeof metadata.path === "string" ? metadata.path : id.split("#")[0]!,
      line: typeof metadata.line === "number" ? metadata.line : 1,
      text: result.documents[0]?.[index] ?? "",
      score: Math.max(0, Math.min(1, 1 - distance)),
    };
  });
}

export async function dropVectorIndex(url: string, collection: string): Promise<void> {
  await client(url).deleteCollection({ name: collection });
}
