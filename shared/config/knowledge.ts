import { posix } from "node:path";
import { checkKeys, int, mapping, num, oneOf, quote, str, strList, type YamlMap } from "./read.ts";
import { type ConfigFile, formatPath } from "./source.ts";
import type { ConfigSnapshot } from "./types.ts";

export const KNOWLEDGE_ENGINES = ["local", "vector"] as const;
/** Where the vector engine's Chroma server listens unless `knowledge.retrieval.url` says otherwise. */
export const DEFAULT_VECTOR_URL = "http://127.0.0.1:8000";

/**
 * `knowledge.retrieval` of daemon.yaml: the engine (local = qmd, vector = Chroma plus the host
 * embedder runner), topK and minScore (applied after fusion), the rewrite targets, and where the
 * engines live (`bin` for another qmd, `url` of Chroma, `embedder` executable).
 */
export function readKnowledgeSettings(f: ConfigFile, root: YamlMap): ConfigSnapshot["knowledge"] {
  const knowledge = child(f, root, "knowledge", []) ?? {};
  checkKeys(f, knowledge, ["knowledge"], ["retrieval", "outsiders"]);
  const outsiders = readOutsiders(f, knowledge);
  const retrieval = child(f, knowledge, "retrieval", ["knowledge"]) ?? {};
  const path = ["knowledge", "retrieval"];
  checkKeys(f, retrieval, path, ["engine", "topK", "minScore", "rewrite", "bin", "url", "embedder"]);
  const engine =
    oneOf(f, retrieval, "engine", path, KNOWLEDGE_ENGINES, {
      hint: " - local searches with qmd, vector adds a Chroma server and the host embedder runner",
    }) ?? "local";
  const topK = int(f, retrieval, "topK", path, { min: 1, max: 1000 });
  const minScore = num(f, retrieval, "minScore", path, { min: 0, max: 1 });
  const rewrite = child(f, retrieval, "rewrite", path) ?? {};
  checkKeys(f, rewrite, [...path, "rewrite"], ["targets"]);
  const rewriteTargets = strList(f, rewrite, "targets", [...path, "rewrite"]) ?? [];
  const bin = str(f, retrieval, "bin", path);
  if (bin !== undefined && !bin.startsWith("/")) {
    f.report(
      [...path, "bin"],
      "invalid_value",
      `"${formatPath([...path, "bin"])}" must be an absolute path to the qmd executable, e.g. /opt/qmd/bin/qmd - leave it out to use the qmd installed with svc`,
    );
  }
  const url = str(f, retrieval, "url", path);
  if (url !== undefined && !isHttpUrl(url)) {
    f.report(
      [...path, "url"],
      "invalid_value",
      `"${formatPath([...path, "url"])}" must be the http(s) URL of the Chroma server, e.g. ${DEFAULT_VECTOR_URL}`,
    );
  }
  const embedder = str(f, retrieval, "embedder", path);
  if (engine === "vector" && embedder === undefined) {
    f.report(
      [...path, "embedder"],
      "required",
      `"${formatPath([...path, "embedder"])}" is required with engine: vector - name the host embedder runner, an executable on the daemon's PATH that reads JSON lines of texts and writes JSON lines of vectors`,
    );
  }
  return {
    retrieval: {
      engine,
      ...(topK !== undefined ? { topK } : {}),
      ...(minScore !== undefined ? { minScore } : {}),
      rewrite: { targets: rewriteTargets },
      ...(bin?.startsWith("/") ? { bin } : {}),
      ...(url !== undefined && isHttpUrl(url) ? { url } : {}),
      ...(embedder !== undefined ? { embedder } : {}),
    },
    ...(outsiders !== undefined ? { outsiders } : {}),
  };
}

/**
 * `knowledge.outsiders`: `none` (the default), or the folder of `knowledge/` whose documents an
 * outsider's run may read. Written relative to `knowledge/`; one that leaves it, or that discovery
 * skips (a hidden one), is refused rather than silently giving outsiders nothing or everything.
 */
function readOutsiders(f: ConfigFile, knowledge: YamlMap): string | undefined {
  const path = ["knowledge", "outsiders"];
  const value = str(f, knowledge, "outsiders", ["knowledge"]);
  if (value === undefined || value === "none") return undefined;
  const folder = posix.normalize(value.trim()).replace(/\/+$/, "");
  if (
    !value.includes("\\") &&
    !posix.isAbsolute(folder) &&
    folder !== "." &&
    !folder.split("/").some((part) => part === ".." || part.startsWith("."))
  )
    return folder;
  f.report(
    path,
    "invalid_value",
    `"${formatPath(path)}" must be none or a folder inside the knowledge base, written relative to knowledge/ without hidden parts, such as public for knowledge/public/ (got ${quote(value)})`,
  );
  return undefined;
}

/**
 * Whether an outsider's run may read the knowledge document at `path` (`knowledge/…`, as the
 * knowledge service names them): only one under the `knowledge.outsiders` folder. The path is
 * normalised first, so `knowledge/public/../secret.md` is judged as the document it reads.
 */
export function outsiderMayRead(outsiders: string | undefined, path: string): boolean {
  if (outsiders === undefined) return false;
  const wanted = posix.normalize(path).replace(/^\.\//, "");
  return wanted.startsWith(`knowledge/${outsiders}/`);
}

function child(f: ConfigFile, obj: YamlMap, key: string, path: (string | number)[]): YamlMap | undefined {
  const value = obj[key];
  if (value === undefined || value === null) return undefined;
  return mapping(f, value, [...path, key]);
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === "http:" || url.protocol === "https:";
  } catch {
    return false;
  }
}
