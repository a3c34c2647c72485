import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import type { QMDStore } from "@tobilu/qmd";
import {
  COLLECTION,
  cleanSnippet,
  fromRawScore,
  type IndexReader,
  type QmdHit,
  toRawScore,
} from "./qmd-hits.ts";

/**
 * The qmd installed with svc, run in-process through its library API: an index build is one
 * store update, a search is a few SQLite FTS5 queries on a store opened once. The module is
 * loaded on first use only, so a configuration without documents never pays for it.
 */
const INDEX_FILE = "index.sqlite";

async function qmdLibrary(): Promise<typeof import("@tobilu/qmd")> {
  return import("@tobilu/qmd");
}

/** Indexes `sourceDir` (its Markdown files) into a fresh index at `indexDir`. */
export async function buildWithLibrary(indexDir: string, sourceDir: string): Promise<void> {
  await mkdir(indexDir, { recursive: true });
  const { createStore } = await qmdLibrary();
  const store = await createStore({
    dbPath: join(indexDir, INDEX_FILE),
    config: { collections: { [COLLECTION]: { path: sourceDir, pattern: "**/*.md" } } },
  });
  try {
    await store.update({ collections: [COLLECTION] });
  } finally {
    await store.close();
  }
}

/** Distinct SQL texts a reader keeps prepared; qmd's search uses a handful. */
const MAX_REUSED_STATEMENTS = 256;

/**
 * better-sqlite3 frees a prepared statement only when its database closes, and qmd prepares its
 * statements again on every search: a reader open for the process's life grew by about 250 KB a
 * search (5 GB of RSS after 20,000 searches). Each SQL text is prepared once per reader instead, and
 * the statement reused: qmd's search runs each statement to completion (`all`, `get`) before the
 * next, and binds its parameters per call. Past MAX_REUSED_STATEMENTS texts, a text is prepared per
 * call as before.
 */
function reuseStatements(db: { prepare: (sql: string) => unknown }): void {
  const prepare = db.prepare.bind(db);
  const prepared = new Map<string, unknown>();
  db.prepare = (sql: string) => {
    let statement = prepared.get(sql);
    if (statement === undefined) {
      statement = prepare(sql);
      if (prepared.size < MAX_REUSED_STATEMENTS) prepared.set(sql, statement);
    }
    return statement;
  };
}

/**
 * What a reader keeps of its terms' matches: at most this many terms, and this many matches over
 * all of them (a term can match up to a search's limit, 4 × topK, of a large corpus), the least
 * recently asked forgotten first. About 100 bytes a match: under 7 MB.
 */
const MAX_KEPT_TERMS = 1_024;
const MAX_KEPT_MATCHES = 65_536;

interface TermMatch {
  file: string;
  title: string;
  /** the term's BM25 in this document, unmapped (toRawScore) */
  raw: number;
}

/**
 * Opens a built index for searching. The SQLite file stays open: a later build writes a new
 * directory, and this reader keeps answering from its own until the caller switches.
 *
 * An index never changes once built, so what one term matches is kept for the reader's life (the
 * most recently asked terms, within MAX_KEPT_TERMS and MAX_KEPT_MATCHES) and each document's text
 * once: a run's terms come first from its event name and its pipeline's instructions, the same for
 * every run of that pipeline, and each term's FTS query cost about 50 us (16 terms, 0.9 ms a search).
 */
export async function openLibraryReader(indexDir: string): Promise<IndexReader> {
  const { createStore } = await qmdLibrary();
  const store: QMDStore = await createStore({ dbPath: join(indexDir, INDEX_FILE) });
  reuseStatements(store.internal.db);
  const kept = new Map<string, TermMatch[]>();
  let keptMatches = 0;
  const documents = new Map<string, { text: string | undefined; snippet: string }>();
  const matches = async (term: string, limit: number): Promise<TermMatch[]> => {
    const key = `${limit} ${term}`;
    const seen = kept.get(key);
    if (seen) {
      // most recently asked last: the first key is the one to forget
      kept.delete(key);
      kept.set(key, seen);
      return seen;
    }
    // no collection filter: the index holds the one collection buildWithLibrary wrote, and
    // qmd takes ten times the limit from FTS (with each document's text) when one is named
    const found = (await store.searchLex(term, { limit })).map((row) => {
      const file = row.filepath.replace(/^qmd:\/\/[^/]+\//, "");
      if (!documents.has(file))
        documents.set(file, { text: row.body, snippet: cleanSnippet(row.body?.slice(0, 500) ?? "") });
      return { file, title: row.title, raw: toRawScore(row.score) };
    });
    // a search beside this one may have asked the same term meanwhile: its entry is replaced
    const twin = kept.get(key);
    if (twin) keptMatches -= twin.length;
    kept.delete(key);
    kept.set(key, found);
    keptMatches += found.length;
    while (kept.size > MAX_KEPT_TERMS || keptMatches > MAX_KEPT_MATCHES) {
      const [oldest, dropped] = kept.entries().next().value!;
      kept.delete(oldest);
      keptMatches -= dropped.length;
    }
    return found;
  };
  return {
    async search(terms, limit): Promise<QmdHit[]> {
      // any-term semantics: one BM25 search per term (qmd ANDs the terms of one query), summed
      const byFile = new Map<string, { match: TermMatch; raw: number }>();
      for (const term of terms) {
        for (const match of await matches(term, limit)) {
          const seen = byFile.get(match.file);
          if (seen) seen.raw += match.raw;
          else byFile.set(match.file, { match, raw: match.raw });
        }
      }
      return [...byFile.values()]
        .map(({ match, raw }): QmdHit => {
          const { text, snippet } = documents.get(match.file)!;
          return {
            file: match.file,
            line: 1,
            title: match.title,
            snippet,
            ...(text === undefined ? {} : { text }),
            score: fromRawScore(raw),
          };
        })
        .sort((a, b) => b.score - a.score)
        .slice(0, limit);
    },
    close: () => store.close(),
  };
}
