import { describe, expect, it } from "vitest";
import { readKnowledge, searchKnowledge } from "../../../shared/knowledge/delivery.ts";
import { Knowledge } from "../../../shared/knowledge/service.ts";
import { KNOWLEDGE_TOOLS, readKnowledgeTool, searchKnowledgeTool } from "../../../shared/knowledge/tools.ts";
import { captureLogger } from "../worker/helpers.ts";
import { corpusDir, knowledgeConfig } from "./support.ts";

describe("the read tools behind delivery search and browse, over real qmd", { timeout: 120_000 }, () => {
  it("search_knowledge answers passages with path, line and score; read_knowledge reads a catalogue path", async () => {
    const dir = await corpusDir();
    const knowledge = await Knowledge.open(knowledgeConfig(dir), captureLogger().logger);

    const found = await searchKnowledge(knowledge, { query: "who answers pages when on call", topK: 2 });
    expect(found.method).toBe("bm25");
    expect(found.passages.length).toBeLessThanOrEqual(2);
    expect(found.passages[0]).toMatchObject({ path: "knowledge/ops/oncall.md", line: expect.any(Number) });
    expect(found.passages[0]!.text).toContain("fifteen minutes");

    const hybrid = await searchKnowledge(knowledge, { query: "restore a backup", method: "hybrid" });
    expect(hybrid.method).toBe("bm25");

    expect(await readKnowledge(knowledge, { path: "knowledge/ops/rotation.md" })).toMatchObject({
      path: "knowledge/ops/rotation.md",
      text: expect.stringContaining("svc setup webhook"),
    });
    // only the sources themselves: no traversal, no other file of the configuration directory
    for (const path of ["knowledge/../daemon.yaml", "../etc/passwd", "knowledge/missing.md", "/etc/passwd"]) {
      expect(await readKnowledge(knowledge, { path })).toEqual({
        error: expect.stringContaining("use a path from CATALOG.md"),
      });
    }
  });

  it("as tool-protocol tools: names, schemas, argument checks, JSON text answers", async () => {
    const dir = await corpusDir();
    const knowledge = await Knowledge.open(knowledgeConfig(dir), captureLogger().logger);
    expect(KNOWLEDGE_TOOLS.map((tool) => tool.name)).toEqual(["search_knowledge", "read_knowledge"]);
    const search = await searchKnowledgeTool.call(knowledge, { query: "rotate a webhook secret", topK: 1 });
    expect(search.isError).toBe(false);
    const parsed = JSON.parse(search.text) as { method: string; passages: { path: string }[] };
    expect(parsed.passages.map((p) => p.path)).toEqual(["knowledge/ops/rotation.md"]);
    expect(await searchKnowledgeTool.call(knowledge, { query: " " })).toMatchObject({ isError: true });
    expect(await searchKnowledgeTool.call(knowledge, { query: "x", topK: 0 })).toMatchObject({
      isError: true,
    });
    expect(await searchKnowledgeTool.call(knowledge, { query: "x", method: "vector" })).toMatchObject({
      isError: true,
    });
    const read = await readKnowledgeTool.call(knowledge, { path: "knowledge/runbook.md" });
    expect(read).toEqual({ isError: false, text: expect.stringContaining("svc daemon restart") });
    expect(await readKnowledgeTool.call(knowledge, { path: "daemon.yaml" })).toMatchObject({ isError: true });
    expect(await readKnowledgeTool.call(knowledge, null)).toMatchObject({ isError: true });
  });
});
