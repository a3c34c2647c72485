import { type Document, isScalar, type YAMLMap } from "yaml";
import { deleteKey, dropIfEmpty, has, mapAt, pairOf, replaceKey } from "../edit.ts";
import { daemon, type Rewrite, rewrites, type Step } from "./step.ts";

/** The 0.5.1 split of `knowledge.mode`, exactly as the release notes give it. */
const MODES: Record<string, { method: string; delivery: string }> = {
  local: { method: "hybrid", delivery: "prompt" },
  mount: { method: "none", delivery: "file" },
  ambient: { method: "none", delivery: "search" },
  catalog: { method: "none", delivery: "browse" },
};

function modeOf(map: YAMLMap): string | undefined {
  const value = pairOf(map, "mode")?.value;
  return isScalar(value) && typeof value.value === "string" ? value.value : undefined;
}

/** 0.5.1: `knowledge.mode` split into `knowledge.method` and `knowledge.delivery`. */
export const v0_5_1: Step = {
  release: "0.5.1",
  title: '"knowledge.mode" → "knowledge.method" + "knowledge.delivery"',
  apply(tree) {
    const pipelines = rewrites(tree, this.release, "pipelines/");
    for (const p of pipelines) {
      const knowledge = mapAt(p.doc, ["knowledge"]);
      if (knowledge && has(knowledge, "mode")) splitMode(p, knowledge);
    }
    // daemon.yaml's mode was the default of every pipeline: it moves into those that set none
    const d = daemon(tree, this.release);
    const knowledge = d && mapAt(d.doc, ["knowledge"]);
    if (!d || !knowledge || !has(knowledge, "mode")) return;
    const split = MODES[modeOf(knowledge) ?? ""];
    if (!split) {
      d.todo(knowledge, ["knowledge"], "mode", unknownMode(modeOf(knowledge)));
      return;
    }
    for (const p of pipelines) {
      if (mapAt(p.doc, ["knowledge"]) || !mapAt(p.doc, [])) continue;
      setKnowledge(p.doc, split);
      p.changed(
        `knowledge: method ${split.method}, delivery ${split.delivery} (the old daemon-wide knowledge.mode)`,
      );
    }
    deleteKey(d.doc, knowledge, "mode");
    dropIfEmpty(d.doc, ["knowledge"]);
    d.changed('moved "knowledge.mode" into each pipeline as "knowledge.method" and "knowledge.delivery"');
  },
};

function setKnowledge(doc: Document, split: { method: string; delivery: string }): void {
  (doc.contents as YAMLMap).items.push(doc.createPair("knowledge", { ...split }));
}

function splitMode(p: Rewrite, knowledge: YAMLMap): void {
  const mode = modeOf(knowledge);
  const split = MODES[mode ?? ""];
  if (!split || has(knowledge, "method") || has(knowledge, "delivery")) {
    p.todo(
      knowledge,
      ["knowledge"],
      "mode",
      split ? 'also sets "method" or "delivery" - keep those and delete "mode"' : unknownMode(mode),
    );
    return;
  }
  replaceKey(p.doc, knowledge, "mode", [
    ["method", split.method],
    ["delivery", split.delivery],
  ]);
  p.changed(`knowledge.mode ${mode} became method: ${split.method}, delivery: ${split.delivery}`);
}

function unknownMode(mode: string | undefined): string {
  return `knowledge.mode ${JSON.stringify(mode ?? null)} is none of ${Object.keys(MODES).join(", ")} - choose "method" (bm25, hybrid, none) and "delivery" (prompt, file, search, browse) and delete "mode"`;
}
