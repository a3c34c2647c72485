import { isMap, isScalar, isSeq, type YAMLMap, type YAMLSeq } from "yaml";
import { deleteKey, mapAt } from "../edit.ts";
import { daemon, type Rewrite, type Step } from "./step.ts";

/** `--name=$input` / `-n=$input`: an option and its value in one word, which getopt also reads as two */
const OPTION_WITH_INPUT = /^(--?[A-Za-z0-9][A-Za-z0-9_.-]*)=(\$[A-Za-z_][A-Za-z0-9_]*)$/;
const INPUT_REFERENCE = /\$[A-Za-z_][A-Za-z0-9_]*/;
const WHOLE_REFERENCE = /^\$[A-Za-z_][A-Za-z0-9_]*$/;
/** what svc now sets in a host tool's environment itself */
const RESERVED_ENV = ["PATH", "WORKTREE"];

/**
 * Unreleased (0.14.0): a host tool's `$name` fills one whole `args` element, and svc sets a tool's
 * `PATH` and `WORKTREE`. An element `--file=$path` becomes `--file`, `$path` (the same to getopt);
 * any other element mixing a reference with text gets a to-do, since splitting it could change
 * what the program reads. `env.PATH` and `env.WORKTREE` are deleted: svc sets them.
 */
export const v0_14_0: Step = {
  release: "0.14.0",
  title:
    'host tools: "--opt=$input" → "--opt", "$input"; "env.PATH" / "env.WORKTREE" removed (svc sets them)',
  apply(tree) {
    const d = daemon(tree, this.release);
    const tools = d && mapAt(d.doc, ["host_tools"]);
    for (const item of tools?.items ?? []) {
      const name = String((item.key as { value: unknown }).value);
      if (!isMap(item.value)) continue;
      const tool = item.value as YAMLMap;
      const args = tool.get("args", true);
      if (isSeq(args)) splitArgs(d!, tool, name, args as YAMLSeq);
      const env = tool.get("env", true);
      if (isMap(env)) dropReservedEnv(d!, name, env as YAMLMap);
    }
  },
};

function splitArgs(d: Rewrite, tool: YAMLMap, name: string, args: YAMLSeq): void {
  for (let index = args.items.length - 1; index >= 0; index--) {
    const node = args.items[index];
    const text = isScalar(node) ? String(node.value) : undefined;
    if (text === undefined || !INPUT_REFERENCE.test(text) || WHOLE_REFERENCE.test(text)) continue;
    const option = OPTION_WITH_INPUT.exec(text);
    if (option) {
      args.items.splice(index, 1, d.doc.createNode(option[1]), d.doc.createNode(option[2]));
      d.changed(
        `"host_tools.${name}.args[${index}]" ${JSON.stringify(text)} became "${option[1]}", "${option[2]}"`,
      );
      continue;
    }
    d.todo(
      tool,
      ["host_tools", name],
      "args",
      `args[${index}] ${JSON.stringify(text)} mixes an input reference with text: give the reference an element of its own`,
    );
  }
}

function dropReservedEnv(d: Rewrite, name: string, env: YAMLMap): void {
  for (const key of RESERVED_ENV) {
    if (!env.has(key)) continue;
    deleteKey(d.doc, env, key);
    d.changed(
      `deleted "host_tools.${name}.env.${key}": svc sets it (the ingress's PATH, the run's worktree)`,
    );
  }
}
