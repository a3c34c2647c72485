import { outsiderMayRead } from "../../shared/config/knowledge.ts";
import type { ConfigSnapshot } from "../../shared/config/types.ts";
import { DEFAULT_TOP_K, type Knowledge } from "../../shared/knowledge/service.ts";
import type { Principal } from "./principal.ts";

/** Why a caller reads no team document; the tools answer it as an error, the API as `403`. */
export const NONE_FOR_OUTSIDERS =
  "no team documents for this run: its event came from outside the repository's team, and knowledge.outsiders in daemon.yaml gives outsiders' runs none (an operator may set it to a folder of knowledge/ whose documents outsiders' runs may read)";

/**
 * The team's documents as `principal` reads them, by every door (the knowledge tools, `GET
 * /knowledge`, `POST /ask`): all of them, except for an outsider's run (its worker recorded
 * `outsider`, or a token without that record), which reads those under `knowledge.outsiders` only,
 * and none (undefined) by default. Its prompt is a stranger's text, and what it reads it can post
 * where the stranger reads it.
 */
export function knowledgeReadBy(
  principal: Principal,
  config: Pick<ConfigSnapshot, "knowledge">,
  knowledge: Knowledge,
): Knowledge | undefined {
  if (!principal.run || principal.run.outsider === false) return knowledge;
  const folder = config.knowledge.outsiders;
  return folder === undefined ? undefined : withinFolder(knowledge, folder, config);
}

/**
 * `knowledge` narrowed to the documents under `folder`: one kept out is missing from the listing,
 * reads as a path that is no document (so it does not show it exists), and takes none of a
 * search's `topK` places (every document is ranked, then the others left out). A Proxy rather than
 * an object of its own: Knowledge's private fields make the class nominal, and every member not
 * narrowed here stays the original's.
 */
function withinFolder(
  knowledge: Knowledge,
  folder: string,
  config: Pick<ConfigSnapshot, "knowledge">,
): Knowledge {
  const mayRead = (path: string) => outsiderMayRead(folder, path);
  const documents = () => knowledge.documents.filter((doc) => mayRead(doc.path));
  const search: Knowledge["search"] = async (query, options) => {
    const topK = options.topK ?? config.knowledge.retrieval.topK ?? DEFAULT_TOP_K;
    const ranked = await knowledge.search(query, {
      ...options,
      topK: Math.max(knowledge.documentCount, topK),
    });
    return { ...ranked, passages: ranked.passages.filter((p) => mayRead(p.path)).slice(0, topK) };
  };
  const list: Knowledge["list"] = async () => (await knowledge.list()).filter((doc) => mayRead(doc.path));
  const read: Knowledge["read"] = async (path) => (mayRead(path) ? knowledge.read(path) : undefined);
  // getters: each access reads the documents as they are now (a reindex may have changed them)
  const narrowed = new Map<PropertyKey, () => unknown>([
    ["documents", documents],
    ["documentCount", () => documents().length],
    ["search", () => search],
    ["list", () => list],
    ["read", () => read],
  ]);
  return new Proxy(knowledge, {
    get(target, property) {
      const own = narrowed.get(property);
      if (own) return own();
      const value = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
