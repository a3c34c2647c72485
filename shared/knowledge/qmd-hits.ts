/** What both ways of running qmd (in-process, or an override executable) answer a search with. */

/** The qmd collection svc indexes the knowledge directory into. */
export const COLLECTION = "knowledge";

export interface QmdHit {
  /** relative to the knowledge directory */
  file: string;
  line: number;
  title: string;
  snippet: string;
  /** the document's text as indexed, when the reader has it (the library does, an executable does not) */
  text?: string;
  /** BM25 over the query's terms, mapped to [0, 1) as qmd does: |bm25| / (1 + |bm25|) */
  score: number;
}

/** One opened index; searches until closed. */
export interface IndexReader {
  /** documents matching any of the terms, best first */
  search(terms: readonly string[], limit: number): Promise<QmdHit[]>;
  close(): Promise<void>;
}

/**
 * qmd reports a BM25 score per search mapped to [0, 1); BM25 is a sum over terms, so per-term
 * scores are mapped back to raw BM25, added, and mapped again.
 */
export function toRawScore(score: number): number {
  const s = Math.min(score, 0.999999);
  return s / (1 - s);
}

export function fromRawScore(raw: number): number {
  return raw / (1 + raw);
}

/** Drops qmd's diff-style `@@ -3,4 @@ (2 before, 0 after)` header line. */
export function cleanSnippet(snippet: string): string {
  return snippet
    .split("\n")
    .filter((line) => !/^@@ .* @@/.test(line))
    .join("\n")
    .trim();
}

export function firstLine(text: string): string {
  return text.trim().split("\n")[0]?.slice(0, 200) ?? "";
}
