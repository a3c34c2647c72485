import { isScalar } from "yaml";
import { deleteKey, has, mapAt, pairOf, plainValue, replaceKey } from "../edit.ts";
import { daemon, rewrites, type Step } from "./step.ts";

/**
 * 0.7.0: `workspaces.retentionDays` split into two tiers; orchestrator `strategy: { type: auto }`
 * required, `assess` renamed `guidance`, `orchestrator: false` removed.
 */
export const v0_7_0: Step = {
  release: "0.7.0",
  title:
    '"workspaces.retentionDays" → both retention tiers; orchestrator "assess" → "guidance", "orchestrator: false" deleted, "strategy" added',
  apply(tree) {
    const d = daemon(tree, this.release);
    const workspaces = d && mapAt(d.doc, ["workspaces"]);
    if (d && workspaces && has(workspaces, "retentionDays")) {
      const days = plainValue(pairOf(workspaces, "retentionDays"));
      // one number used to keep both checkouts and transcripts: keeping both for as long is the same behaviour
      const tiers = ["checkoutRetentionDays", "transcriptRetentionDays"].filter(
        (key) => !has(workspaces, key),
      );
      replaceKey(
        d.doc,
        workspaces,
        "retentionDays",
        tiers.map((key) => [key, days]),
      );
      d.changed(
        `workspaces.retentionDays ${days} became ${tiers.map((key) => `${key}: ${days}`).join(", ") || "nothing (both tiers were set)"}`,
      );
    }
    for (const p of rewrites(tree, this.release, "pipelines/")) {
      const root = mapAt(p.doc, []);
      const value = pairOf(root, "orchestrator")?.value;
      if (root && isScalar(value) && value.value === false) {
        deleteKey(p.doc, root, "orchestrator");
        p.changed('deleted "orchestrator: false" (omitting it means direct execution)');
        continue;
      }
      const orchestrator = mapAt(p.doc, ["orchestrator"]);
      if (!orchestrator) continue;
      if (has(orchestrator, "assess")) {
        if (has(orchestrator, "guidance"))
          p.todo(
            orchestrator,
            ["orchestrator"],
            "assess",
            'both "assess" and "guidance" are set - keep "guidance" and delete "assess"',
          );
        else {
          replaceKey(p.doc, orchestrator, "assess", [
            ["guidance", plainValue(pairOf(orchestrator, "assess"))],
          ]);
          p.changed('renamed "orchestrator.assess" to "orchestrator.guidance"');
        }
      }
      if (!has(orchestrator, "strategy")) {
        orchestrator.items.unshift(
          p.doc.createPair("strategy", p.doc.createNode({ type: "auto" }, { flow: true })),
        );
        p.changed('added "orchestrator.strategy: { type: auto }"');
      }
    }
  },
};
