import { has, mapAt, renameKey } from "../edit.ts";
import { rewrites, type Step } from "./step.ts";

/** 0.5.0: `prompt` renamed `instructions`; agent file `SOUL.md` renamed `PERSONA.md`. */
export const v0_5_0: Step = {
  release: "0.5.0",
  title: 'pipeline "prompt" → "instructions"; agents/<name>/SOUL.md → PERSONA.md',
  apply(tree) {
    for (const p of rewrites(tree, this.release, "pipelines/")) {
      const root = mapAt(p.doc, []);
      if (!root || !has(root, "prompt")) continue;
      if (renameKey(root, "prompt", "instructions")) p.changed('renamed "prompt" to "instructions"');
      else
        p.todo(
          root,
          [],
          "prompt",
          'both "prompt" and "instructions" are set - keep one text under "instructions" and delete "prompt"',
        );
    }
    for (const soul of tree.list("agents/").filter((file) => file.endsWith("/SOUL.md"))) {
      const persona = soul.replace(/SOUL\.md$/, "PERSONA.md");
      if (!tree.rename(this.release, soul, persona)) {
        tree.fileTodo(soul, `${persona} exists too - merge SOUL.md into it and delete SOUL.md`);
      }
    }
  },
};
