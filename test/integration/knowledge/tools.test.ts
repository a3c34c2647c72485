import { describe, expect, it } from "vitest";
import { readKnowledge, searchKnowledge } from "../../../shared/knowledge/delivery.ts";
import { Knowledge } from "../../../shared/knowledge/service.ts";
import { captureLogger } from "../worker/helpers.ts";
import { corpusDir, knowledgeConfig } from "./support.ts";

describe("the read tools behind delivery search and browse, over real qmd", () => {
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
});
