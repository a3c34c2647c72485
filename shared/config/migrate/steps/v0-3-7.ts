import { deleteKey, dropIfEmpty, has, mapAt, moveComments, pairOf, setAtEnd } from "../edit.ts";
import { daemon, type Step } from "./step.ts";

const MOVED = ["engine", "topK", "minScore", "rewrite"];

/** 0.3.7: `lifecycle.retrieve` removed; its tuning moved to `knowledge.retrieval`. */
export const v0_3_7: Step = {
  release: "0.3.7",
  title: 'daemon.yaml "lifecycle.retrieve" → "knowledge.retrieval"',
  apply(tree) {
    const d = daemon(tree, this.release);
    const lifecycle = d && mapAt(d.doc, ["lifecycle"]);
    const retrieve = lifecycle && mapAt(d.doc, ["lifecycle", "retrieve"]);
    if (!d || !lifecycle || !has(lifecycle, "retrieve")) return;
    if (!retrieve) {
      d.todo(lifecycle, ["lifecycle"], "retrieve", 'move this tuning to "knowledge.retrieval" by hand');
      return;
    }
    const target = mapAt(d.doc, ["knowledge", "retrieval"]);
    const moved: string[] = [];
    for (const key of MOVED) {
      const pair = pairOf(retrieve, key);
      if (!pair || has(target, key)) continue;
      // the node itself moves, with its comments and flow style
      moveComments(pair, setAtEnd(d.doc, ["knowledge", "retrieval"], key, pair.value));
      retrieve.items.splice(retrieve.items.indexOf(pair), 1);
      moved.push(key);
    }
    if (moved.length) d.changed(`moved lifecycle.retrieve.{${moved.join(", ")}} to knowledge.retrieval`);
    if (retrieve.items.length === 0) {
      deleteKey(d.doc, lifecycle, "retrieve");
      dropIfEmpty(d.doc, ["lifecycle"]);
      d.changed('deleted "lifecycle.retrieve"');
    } else {
      d.todo(
        lifecycle,
        ["lifecycle"],
        "retrieve",
        'what is left here has no place in "knowledge.retrieval" (engine, topK, minScore, rewrite.targets) or is already set there - merge it by hand and delete the key',
      );
    }
  },
};
