import { appendFile, mkdir, readdir, stat, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { RetrievalToolError } from "../../../shared/knowledge/qmd.ts";
import { Knowledge } from "../../../shared/knowledge/service.ts";
import { captureLogger } from "../worker/helpers.ts";
import { corpusDir, knowledgeConfig, writeExecutable } from "./support.ts";

// several real qmd builds per test: bounds for a loaded machine, not speed assertions
describe("knowledge: the local engine with real qmd over the fixture corpus", { timeout: 120_000 }, () => {
  it("BM25 finds the document that answers the question, with its path and line", async () => {
    const dir = await corpusDir();
    const { logger } = captureLogger();
    const knowledge = await Knowledge.open(knowledgeConfig(dir), logger);
    expect(knowledge.documentCount).toBe(8);
    expect(knowledge.toolVersion).toMatch(/^\d+\.\d+\.\d+$/);

    const restore = await knowledge.search("How do I restore a backup?", { method: "bm25" });
    expect(restore.methodUsed).toBe("bm25");
    expect(restore.passages[0]?.path).toBe("knowledge/backups.md");
    expect(restore.passages[0]?.text).toContain("pg_restore");
    expect(restore.passages[0]!.line).toBeGreaterThan(1);

    const rotate = await knowledge.search("rotate the webhook secret", { method: "bm25" });
    expect(rotate.passages[0]?.path).toBe("knowledge/ops/rotation.md");

    // qmd's index and configuration live under the data directory, nowhere else
    const data = await readdir(join(dir, "data", "knowledge"));
    expect(data).toContain("state.json");
    expect(data.some((name) => name.startsWith("qmd-"))).toBe(true);
  });

  it("topK and minScore bound what comes back", async () => {
    const dir = await corpusDir();
    const { logger } = captureLogger();
    const wide = await Knowledge.open(knowledgeConfig(dir), logger);
    // "restart" is in three documents
    const all = await wide.search("restart", { method: "bm25", topK: 10 });
    expect(all.passages.length).toBeGreaterThanOrEqual(3);
    const two = await wide.search("restart", { method: "bm25", topK: 2 });
    expect(two.passages.map((p) => p.path)).toEqual(all.passages.slice(0, 2).map((p) => p.path));

    const scores = all.passages.map((p) => p.score);
    const cut = (scores[0]! + scores.at(-1)!) / 2;
    const strict = await wide.search("restart", { method: "bm25", topK: 10, minScore: cut });
    expect(strict.passages.length).toBeGreaterThan(0);
    expect(strict.passages.length).toBeLessThan(all.passages.length);
    for (const passage of strict.passages) expect(passage.score).toBeGreaterThanOrEqual(cut);

    // the configured values are the defaults of a search
    const configured = await Knowledge.open(knowledgeConfig(dir, { topK: 1 }), logger);
    expect((await configured.search("restart", { method: "bm25" })).passages).toHaveLength(1);
  });

  it("rebuilds the index at start when a source changed, and only then", async () => {
    const dir = await corpusDir();
    const { logger, lines } = captureLogger();
    await Knowledge.open(knowledgeConfig(dir), logger);
    const builds = () => lines.filter((line) => line.includes("documents indexed in")).length;
    expect(builds()).toBe(1);

    const again = await Knowledge.open(knowledgeConfig(dir), logger);
    expect(builds()).toBe(1);
    expect((await again.search("zeppelin", { method: "bm25" })).passages).toEqual([]);

    const file = join(dir, "knowledge", "deploys.md");
    await appendFile(file, "\nFreeze window: no zeppelin deploys during the holidays.\n");
    const later = new Date(Date.now() + 5_000);
    await utimes(file, later, later);
    const rebuilt = await Knowledge.open(knowledgeConfig(dir), logger);
    expect(builds()).toBe(2);
    const found = await rebuilt.search("zeppelin", { method: "bm25" });
    expect(found.passages[0]?.path).toBe("knowledge/deploys.md");

    // a new document counts as a change too
    await mkdir(join(dir, "knowledge", "new"), { recursive: true });
    await writeFile(join(dir, "knowledge", "new", "kites.md"), "# Kites\nKites fly in the wind.\n");
    const withNew = await Knowledge.open(knowledgeConfig(dir), logger);
    expect(builds()).toBe(3);
    expect((await withNew.search("kites", { method: "bm25" })).passages[0]?.path).toBe(
      "knowledge/new/kites.md",
    );
  });

  it("a running role follows a reindex made since its boot, new documents included", async () => {
    const dir = await corpusDir();
    const { logger } = captureLogger();
    const running = await Knowledge.open(knowledgeConfig(dir), logger);
    await writeFile(join(dir, "knowledge", "gliders.md"), "# Gliders\nGliders need thermals.\n");
    expect((await running.search("thermals", { method: "bm25" })).passages).toEqual([]);
    // what `svc knowledge reindex` does on the same host
    await Knowledge.open(knowledgeConfig(dir), logger, { force: true });
    const found = await running.search("thermals", { method: "bm25" });
    expect(found.passages[0]?.path).toBe("knowledge/gliders.md");
    expect(running.documentCount).toBe(9);
    expect(await running.read("knowledge/gliders.md")).toContain("thermals");
  });

  it("passages come from the index a role reads: an edited document's new text after a reindex, not before", async () => {
    const dir = await corpusDir();
    const { logger } = captureLogger();
    const doc = join(dir, "knowledge", "gliders.md");
    await writeFile(doc, "# Gliders\nGliders need thermals to climb.\n");
    const running = await Knowledge.open(knowledgeConfig(dir), logger);
    const before = await running.search("thermals", { method: "bm25" });
    expect(before.passages[0]?.text).toContain("thermals to climb");
    await writeFile(doc, "# Gliders\nGliders need thermals and a winch launch.\n");
    // not reindexed: the passage stays what the index found
    expect((await running.search("thermals", { method: "bm25" })).passages[0]?.text).toContain(
      "thermals to climb",
    );
    await Knowledge.open(knowledgeConfig(dir), logger, { force: true });
    const after = await running.search("thermals", { method: "bm25" });
    expect(after.passages[0]?.text).toContain("winch launch");
  });

  it("hybrid without vectors serves BM25, records it and says so once", async () => {
    const dir = await corpusDir();
    const { logger, lines } = captureLogger();
    const knowledge = await Knowledge.open(knowledgeConfig(dir), logger);
    const first = await knowledge.search("restore backup", { method: "hybrid" });
    await knowledge.search("restart ingress", { method: "hybrid" });
    expect(first.methodUsed).toBe("bm25");
    expect(first.passages[0]?.path).toBe("knowledge/backups.md");
    expect(lines.filter((line) => line.includes("knowledge.hybrid_without_vectors"))).toHaveLength(1);
  });

  it("refuses to start with qmd older than 2.8.3 or missing, naming the floor and the fix", async () => {
    const dir = await corpusDir();
    const { logger } = captureLogger();
    const old = await writeExecutable(join(dir, "qmd-old"), '#!/bin/sh\necho "qmd 2.8.2 (abc1234)"\n');
    const failure = await Knowledge.open(knowledgeConfig(dir, { bin: old }), logger).catch((e) => e);
    expect(failure).toBeInstanceOf(RetrievalToolError);
    expect(failure.message).toContain("2.8.3");
    expect(failure.message).toContain("is 2.8.2");
    expect(failure.message).toContain("knowledge.retrieval.bin");

    const missing = join(dir, "no-such-qmd");
    const gone = await Knowledge.open(knowledgeConfig(dir, { bin: missing }), logger).catch((e) => e);
    expect(gone).toBeInstanceOf(RetrievalToolError);
    expect(gone.message).toContain("2.8.3");
    expect(gone.message).toContain("it is missing");

    // without documents there is nothing to retrieve: no check, no index
    const empty = await corpusDir();
    await import("node:fs/promises").then((fs) => fs.rm(join(empty, "knowledge"), { recursive: true }));
    const none = await Knowledge.open(knowledgeConfig(empty, { bin: missing }), logger);
    expect(none.documentCount).toBe(0);
    expect(await stat(join(empty, "data")).catch(() => undefined)).toBeUndefined();
  });
  // better-sqlite3 frees a statement only when its database closes, and qmd prepares its statements
  // on every search: before statements were reused, a long-lived reader grew by about 250 KB a search.
  // Each search here asks eight terms never asked before, so qmd runs its statements every time and
  // the reader's kept terms (1,024 at most) fill and then forget as many as they learn.
  it("a reader searched thousands of times keeps its memory", async () => {
    const dir = await corpusDir();
    const { logger } = captureLogger();
    const knowledge = await Knowledge.open(knowledgeConfig(dir), logger);
    const question = "restart the service after you rotate the webhook secret and restore a backup";
    const first = await knowledge.search(question, { method: "bm25", topK: 10 });
    expect(first.passages.length).toBeGreaterThan(2);
    const unheard = (i: number) => Array.from({ length: 8 }, (_, word) => `unheard${i}x${word}`).join(" ");
    const asked = (i: number) => knowledge.search(`${question} ${unheard(i)}`, { method: "bm25", topK: 10 });
    // past the warm-up (compiled code, the heap's first growth), memory stays where it is
    for (let i = 0; i < 1_500; i += 1) await asked(i);
    const before = process.memoryUsage().rss;
    for (let i = 1_500; i < 4_000; i += 1) await asked(i);
    const grownMiB = (process.memoryUsage().rss - before) / 1024 / 1024;
    // the same answers throughout: a new term's, and those of terms long forgotten
    expect((await asked(4_000)).passages).toEqual(first.passages);
    expect((await knowledge.search(question, { method: "bm25", topK: 10 })).passages).toEqual(first.passages);
    // the leak this guards against grew 250 KB a search, over 600 MiB here; the rest is the
    // allocator's and the collector's noise, which reached 32 MiB on a loaded CI machine
    expect(grownMiB).toBeLessThan(64);
  });
});
