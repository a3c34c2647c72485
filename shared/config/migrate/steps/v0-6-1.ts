import { has, mapAt, pairOf, plainValue } from "../edit.ts";
import { daemon, type Rewrite, rewrites, type Step } from "./step.ts";

/**
 * 0.6.1: `sandboxes.forwardEnv` and `sandbox.forwardEnv` removed; secrets are declared in the
 * pipeline `env` manifest. A manifest holds values, and the old key only named variables of the
 * daemon's environment: copying their values into pipeline files would write secrets to disk, so
 * this stays a to-do that names the variables.
 */
export const v0_6_1: Step = {
  release: "0.6.1",
  title:
    '"sandboxes.forwardEnv" / "sandbox.forwardEnv" → the pipeline "env" manifest (a to-do naming the variables)',
  apply(tree) {
    const d = daemon(tree, this.release);
    const sandboxes = d && mapAt(d.doc, ["sandboxes"]);
    if (d && sandboxes && has(sandboxes, "forwardEnv"))
      todo(d, ["sandboxes"], "each pipeline's", plainValue(pairOf(sandboxes, "forwardEnv")));
    for (const p of rewrites(tree, this.release, "pipelines/")) {
      const sandbox = mapAt(p.doc, ["sandbox"]);
      if (sandbox && has(sandbox, "forwardEnv"))
        todo(p, ["sandbox"], "this pipeline's", plainValue(pairOf(sandbox, "forwardEnv")));
    }
  },
};

function todo(r: Rewrite, path: string[], where: string, names: unknown): void {
  const list = Array.isArray(names) ? names.map(String).join(", ") : String(names);
  r.todo(
    mapAt(r.doc, path)!,
    path,
    "forwardEnv",
    `declare ${list} in ${where} "env" manifest (env: { NAME: <value> }), then delete "forwardEnv"`,
  );
}
