import { isScalar } from "yaml";
import { deleteKey, dropIfEmpty, has, mapAt } from "../edit.ts";
import { daemon, rewrites, type Step } from "./step.ts";

/** 0.8.0: `trigger.manual` removed; the tracing sink block removed; member `kind: bot` became `kind: agent`. */
export const v0_8_0: Step = {
  release: "0.8.0",
  title: '"trigger.manual" and "tracing" deleted; member "kind: bot" → "kind: agent"',
  apply(tree) {
    for (const p of rewrites(tree, this.release, "pipelines/")) {
      const trigger = mapAt(p.doc, ["trigger"]);
      if (!trigger || !has(trigger, "manual")) continue;
      deleteKey(p.doc, trigger, "manual");
      dropIfEmpty(p.doc, ["trigger"]);
      p.changed('deleted "trigger.manual" (every pipeline is fireable by name)');
    }
    const d = daemon(tree, this.release);
    const root = d && mapAt(d.doc, []);
    if (d && root && has(root, "tracing")) {
      deleteKey(d.doc, root, "tracing");
      d.changed('deleted the tracing sink block "tracing" (lineage is in the database: svc trace)');
    }
    const members = rewrites(tree, this.release, "members.yaml")[0];
    const list = members?.doc.get("members", true) as { items?: unknown[] } | undefined;
    for (const [index, item] of (list?.items ?? []).entries()) {
      const kind = (item as { get?: (key: string, keep: boolean) => unknown }).get?.("kind", true);
      if (isScalar(kind) && kind.value === "bot") {
        kind.value = "agent";
        members!.changed(`members[${index}].kind: bot became agent`);
      }
    }
  },
};
