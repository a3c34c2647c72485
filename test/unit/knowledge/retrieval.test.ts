import { describe, expect, it } from "vitest";
import { bestChunk, chunkText } from "../../../shared/knowledge/chunks.ts";
import { knowledgeSection } from "../../../shared/knowledge/delivery.ts";
import { searchTerms } from "../../../shared/knowledge/keywords.ts";
import { compareVersions } from "../../../shared/knowledge/qmd.ts";
import { RRF_K, reciprocalRankFusion } from "../../../shared/knowledge/rrf.ts";

const ranked = (...keys: string[]) => keys.map((key) => ({ key, item: key }));

describe("reciprocal-rank fusion (k = 60)", () => {
  it("sums 1/(k + rank) over the lists, normalised by the best possible sum, best first", () => {
    const bm25 = ranked("a", "b", "c");
    const vectors = ranked("b", "d", "a");
    const fused = reciprocalRankFusion([bm25, vectors]);
    const max = 2 / (RRF_K + 1);
    const expected = {
      a: (1 / 61 + 1 / 63) / max,
      b: (1 / 62 + 1 / 61) / max,
      c: 1 / 63 / max,
      d: 1 / 62 / max,
    };
    expect(fused.map((f) => f.key)).toEqual(["b", "a", "d", "c"]);
    for (const entry of fused)
      expect(entry.score).toBeCloseTo(expected[entry.key as keyof typeof expected], 12);
    expect(RRF_K).toBe(60);
  });

  it("a document first in every list scores 1; one list alone keeps its order", () => {
    expect(reciprocalRankFusion([ranked("x", "y"), ranked("x", "z")])[0]).toMatchObject({
      key: "x",
      score: 1,
    });
    expect(reciprocalRankFusion([ranked("p", "q", "r")]).map((f) => f.key)).toEqual(["p", "q", "r"]);
    expect(reciprocalRankFusion([])).toEqual([]);
  });
});

describe("search terms, passages and the prompt section", () => {
  it("keeps the distinctive words of a question", () => {
    expect(searchTerms("How do I restore the database from a backup? Restore it!")).toEqual([
      "restore",
      "database",
      "backup",
    ]);
  });

  it("splits a document at headings and picks the section matching the terms", () => {
    const chunks = chunkText(
      "knowledge/b.md",
      "# Backups\n\nNightly pg_dump.\n\n## Restore\n\nRun pg_restore.\n",
    );
    expect(chunks.map((c) => [c.line, c.text])).toEqual([
      [1, "# Backups\n\nNightly pg_dump."],
      [5, "## Restore\n\nRun pg_restore."],
    ]);
    expect(bestChunk(chunks, ["restore"], 1)?.line).toBe(5);
    expect(bestChunk(chunks, ["nothing"], 6)?.line).toBe(5);
  });

  it("the ## Knowledge section carries path:line and stays within its budget", () => {
    const passage = (n: number) => ({
      path: `knowledge/doc${n}.md`,
      line: n,
      score: 1 / n,
      title: "",
      text: "word ".repeat(100),
    });
    const section = knowledgeSection([passage(1), passage(2), passage(3)], 700);
    expect(section.startsWith("## Knowledge")).toBe(true);
    expect(section).toContain("### knowledge/doc1.md:1");
    expect(section.length).toBeLessThanOrEqual(700);
    expect(section).not.toContain("doc3.md");
    expect(knowledgeSection([])).toBe("");
  });

  it("compares versions numerically against the floor", () => {
    expect(compareVersions("2.8.2", "2.8.3")).toBeLessThan(0);
    expect(compareVersions("2.10.0", "2.8.3")).toBeGreaterThan(0);
    expect(compareVersions("2.8.3", "2.8.3")).toBe(0);
  });
});
