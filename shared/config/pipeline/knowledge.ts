import { checkKeys, mapping, oneOf, type YamlMap } from "../read.ts";
import type { ConfigFile } from "../source.ts";
import type { Pipeline } from "../types.ts";

export const KNOWLEDGE_METHODS = ["bm25", "hybrid", "none"] as const;
export const KNOWLEDGE_DELIVERIES = ["prompt", "file", "search", "browse"] as const;

export function readKnowledge(f: ConfigFile, root: YamlMap): Pipeline["knowledge"] {
  const raw =
    root.knowledge == null
      ? {}
      : (mapping(f, root.knowledge, ["knowledge"], " such as { method: hybrid }") ?? {});
  checkKeys(f, raw, ["knowledge"], ["method", "delivery"]);
  const method = oneOf(f, raw, "method", ["knowledge"], KNOWLEDGE_METHODS) ?? "hybrid";
  const delivery = oneOf(f, raw, "delivery", ["knowledge"], KNOWLEDGE_DELIVERIES);
  return delivery ? { method, delivery } : { method };
}
