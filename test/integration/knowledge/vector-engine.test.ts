import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Knowledge, KnowledgeIndexError } from "../../../shared/knowledge/service.ts";
import { captureLogger } from "../worker/helpers.ts";
import { FakeChroma } from "./fake-chroma.ts";
import { corpusDir, knowledgeConfig } from "./support.ts";

const EMBEDDER_DIR = join(import.meta.dirname, "../../fixtures/knowledge/embedder");

describe("knowledge: the vector engine through the chromadb client, vectors from the host embedder runner", {
  timeout: 120_000,
}, () => {
  const chroma = new FakeChroma();
  const path = process.env.PATH;

  beforeAll(async () => {
    await chroma.start();
    // the embedder runner is found on the daemon's PATH, as in production
    process.env.PATH = `${EMBEDDER_DIR}:${path}`;
  });
  afterAll(async () => {
    process.env.PATH = path;
    await chroma.stop();
  });

  it("indexes every passage into a Chroma collection and fuses vectors with BM25 for hybrid", async () => {
    const dir = await corpusDir();
    const { logger, lines } = captureLogger();
    const config = knowledgeConfig(dir, { engine: "vector", url: chroma.url, embedder: "svc-test-embedder" });
    const knowledge = await Knowledge.open(config, logger);
    expect(chroma.collections.size).toBe(1);
    const [collection] = [...chroma.collections.values()];
    expect(collection!.name).toMatch(/^svc-knowledge-/);
    // every document contributed passages, each with its path and first line
    const paths = new Set([...collection!.records.values()].map((r) => r.metadata?.path));
    expect(paths.size).toBe(8);
    expect(collection!.records.get("knowledge/backups.md#5")?.document).toContain("pg_restore");
    expect(collection!.records.get("knowledge/backups.md#5")?.embedding).toHaveLength(256);
    expect(lines.some((line) => line.includes("embedded") && line.includes("passages"))).toBe(true);

    const hybrid = await knowledge.search("restore a backup", { method: "hybrid" });
    expect(hybrid.methodUsed).toBe("hybrid");
    expect(hybrid.passages[0]?.path).toBe("knowledge/backups.md");
    // the top document of both rankings gets the full fused score
    expect(hybrid.passages[0]?.score).toBeCloseTo(1, 5);
    for (const passage of hybrid.passages) expect(passage.score).toBeLessThanOrEqual(1);
    expect(chroma.requests.some((r) => r.method === "POST" && r.path.endsWith("/query"))).toBe(true);

    const bm25 = await knowledge.search("restore a backup", { method: "bm25" });
    expect(bm25.methodUsed).toBe("bm25");

    // unchanged sources: the next start reuses the collection
    const before = chroma.requests.filter((r) => r.path.endsWith("/add")).length;
    await Knowledge.open(config, logger);
    expect(chroma.requests.filter((r) => r.path.endsWith("/add")).length).toBe(before);
  });

  it("the embedder missing from the PATH fails the index build with the contract's message", async () => {
    const dir = await corpusDir();
    const { logger } = captureLogger();
    const config = knowledgeConfig(dir, {
      engine: "vector",
      url: chroma.url,
      embedder: "svc-no-such-embedder",
    });
    const failure = await Knowledge.open(config, logger).catch((error) => error);
    expect(failure).toBeInstanceOf(KnowledgeIndexError);
    expect(failure.message).toBe(
      'knowledge index: the embedder "svc-no-such-embedder" cannot start: no such executable on the PATH',
    );
  });

  it("the vector store gone at search time: hybrid serves BM25 and says so once", async () => {
    const dir = await corpusDir();
    const { logger, lines } = captureLogger();
    const spare = new FakeChroma();
    await spare.start();
    const config = knowledgeConfig(dir, { engine: "vector", url: spare.url, embedder: "svc-test-embedder" });
    const knowledge = await Knowledge.open(config, logger);
    await spare.stop();
    const result = await knowledge.search("restore a backup", { method: "hybrid" });
    expect(result.methodUsed).toBe("bm25");
    expect(result.passages[0]?.path).toBe("knowledge/backups.md");
    await knowledge.search("on call", { method: "hybrid" });
    expect(lines.filter((line) => line.includes("knowledge.hybrid_without_vectors"))).toHaveLength(1);
  });
});
