import type { Document, YAMLMap } from "yaml";
import { markTodo, type Path } from "../edit.ts";
import type { ConfigTree } from "../tree.ts";

/** One release of "Changes by release": the rewrites it needs, applied in release order. */
export interface Step {
  release: string;
  /** one line for `svc config migrate --help` and the progress output */
  title: string;
  apply(tree: ConfigTree, context: StepContext): void;
}

export interface StepContext {
  /** where a host tool's bare command name is looked up (PATH) */
  env: NodeJS.ProcessEnv;
}

/** A file being rewritten by one step: records changes and to-dos under the step's release. */
export class Rewrite {
  readonly tree: ConfigTree;
  readonly release: string;
  readonly file: string;
  readonly doc: Document;

  constructor(tree: ConfigTree, release: string, file: string, doc: Document) {
    this.tree = tree;
    this.release = release;
    this.file = file;
    this.doc = doc;
  }

  changed(text: string): void {
    this.tree.changed(this.release, this.file, text);
  }

  /** A to-do above `key` of the mapping at `path`; listed on every run, written once. */
  todo(map: YAMLMap, path: Path, key: string, text: string): void {
    if (markTodo(map, key, text)) this.changed(`to-do written above "${[...path, key].join(".")}"`);
  }
}

/** Every file of `prefix` with a usable document, as a Rewrite for `release`. */
export function rewrites(tree: ConfigTree, release: string, prefix: string): Rewrite[] {
  const out: Rewrite[] = [];
  for (const file of tree.list(prefix)) {
    const doc = tree.doc(file);
    if (doc) out.push(new Rewrite(tree, release, file, doc));
  }
  return out;
}

export function daemon(tree: ConfigTree, release: string): Rewrite | undefined {
  return rewrites(tree, release, "daemon.yaml")[0];
}
