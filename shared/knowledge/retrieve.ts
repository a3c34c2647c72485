import { type RewriteDeps, rewriteQuery } from "./rewrite.ts";
import type { Knowledge, SearchOptions, SearchResult } from "./service.ts";

export interface Retrieval extends SearchResult {
  /** the query that found the passages: the rewrite's, or the original text */
  query: string;
}

/**
 * Retrieval for a question or an event: the rewrite targets turn the text into a query first.
 * A rewrite is a model's guess; when its query finds nothing the original text is searched too,
 * so a target that answers off the point ("I do not know.") cannot empty the retrieval.
 */
export async function retrieve(
  knowledge: Knowledge,
  text: string,
  rewriteTargets: readonly string[],
  deps: RewriteDeps,
  options: SearchOptions,
): Promise<Retrieval> {
  const rewritten = await rewriteQuery(text, rewriteTargets, deps);
  const result = await knowledge.search(rewritten.query, options);
  if (result.passages.length > 0 || rewritten.query === text) return { ...result, query: rewritten.query };
  deps.logger.warn(
    `knowledge: the query rewritten by target ${rewritten.target} found nothing; searching the original text`,
    { event: "knowledge.rewrite_empty", target: rewritten.target },
  );
  return { ...(await knowledge.search(text, options)), query: text };
}
