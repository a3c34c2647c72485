import { has, mapAt, renameKey } from "../edit.ts";
import { rewrites, type Step } from "./step.ts";

/** 0.9.2: protocols renamed policies (`protocols/` to `policies/`, frontmatter `protocols:` to `policies:`). */
export const v0_9_2: Step = {
  release: "0.9.2",
  title: 'protocols/ → policies/; frontmatter "protocols:" → "policies:"',
  apply(tree) {
    for (const file of tree.list("protocols/")) {
      const to = file.replace(/^protocols\//, "policies/");
      if (!tree.rename(this.release, file, to))
        tree.fileTodo(file, `${to} exists too - merge the two and delete ${file}`);
    }
    const documents = [
      ...rewrites(tree, this.release, "agents/"),
      ...rewrites(tree, this.release, "skills/"),
    ].filter((r) => /\/(PERSONA|SKILL)\.md$/.test(r.file));
    for (const r of documents) {
      const meta = mapAt(r.doc, []);
      if (!meta || !has(meta, "protocols")) continue;
      if (renameKey(meta, "protocols", "policies"))
        r.changed('renamed frontmatter "protocols:" to "policies:"');
      else
        r.todo(
          meta,
          [],
          "protocols",
          'both "protocols:" and "policies:" are set - merge the lists under "policies:" and delete "protocols:"',
        );
    }
  },
};
