import { isMap, isScalar, type YAMLMap } from "yaml";
import {
  deleteKey,
  dropIfEmpty,
  has,
  mapAt,
  moveComments,
  pairOf,
  plainValue,
  replaceKey,
  setAtEnd,
} from "../edit.ts";
import { splitCommand } from "./host-tool-command.ts";
import { daemon, type Rewrite, rewrites, type Step, type StepContext } from "./step.ts";

/**
 * 0.9.0: webhook credentials moved to `webhooks.sources`; `orchestrator.tools` became top-level
 * `host_tools` declaring `exec` and `args` (no `run:` shell command).
 */
export const v0_9_0: Step = {
  release: "0.9.0",
  title:
    '"webhooks.secret" / "webhooks.tracker" / "webhooks.tokens" → "webhooks.sources"; "orchestrator.tools" → "host_tools" with "exec" + "args"',
  apply(tree, context) {
    const d = daemon(tree, this.release);
    if (d) {
      moveWebhooks(d);
      moveOrchestratorTools(d);
      const tools = mapAt(d.doc, ["host_tools"]);
      for (const item of tools?.items ?? []) {
        const name = String((item.key as { value: unknown }).value);
        const tool = isMap(item.value) ? (item.value as YAMLMap) : undefined;
        if (tool && has(tool, "run")) splitRun(d, tool, name, context);
      }
    }
    for (const p of rewrites(tree, this.release, "pipelines/")) {
      const orchestrator = mapAt(p.doc, ["orchestrator"]);
      if (!orchestrator || !has(orchestrator, "tools")) continue;
      const names = plainValue(pairOf(orchestrator, "tools"));
      deleteKey(p.doc, orchestrator, "tools");
      p.changed(
        `deleted "orchestrator.tools"${Array.isArray(names) ? ` (${names.join(", ")})` : ""}: host tools are declared in daemon.yaml's "host_tools" and register as host_<name>`,
      );
    }
  },
};

const OLD_SOURCES: [key: string, verify: string, name: string][] = [
  ["secret", "codehost", "codehost"],
  ["tracker", "tracker", "tracker"],
];

function moveWebhooks(d: Rewrite): void {
  const webhooks = mapAt(d.doc, ["webhooks"]);
  if (!webhooks) return;
  const sources = () => mapAt(d.doc, ["webhooks", "sources"]);
  const freeName = (base: string) => {
    let name = base;
    for (let n = 2; pairOf(sources(), name); n++) name = `${base}-${n}`;
    return name;
  };
  for (const [key, verify, base] of OLD_SOURCES) {
    const secret = plainValue(pairOf(webhooks, key));
    if (secret === undefined) continue;
    if (typeof secret !== "string") {
      d.todo(
        webhooks,
        ["webhooks"],
        key,
        `move this secret to "webhooks.sources.<name>: { verify: ${verify}, secret: ... }" by hand`,
      );
      continue;
    }
    const name = freeName(base);
    moveComments(pairOf(webhooks, key)!, setAtEnd(d.doc, ["webhooks", "sources"], name, { verify, secret }));
    webhooks.items.splice(webhooks.items.indexOf(pairOf(webhooks, key)!), 1);
    d.changed(`"webhooks.${key}" became source "webhooks.sources.${name}" (verify: ${verify})`);
  }
  const tokens = mapAt(d.doc, ["webhooks", "tokens"]);
  for (const item of [...(tokens?.items ?? [])]) {
    const name = String((item.key as { value: unknown }).value);
    const value = plainValue(item);
    const secret = typeof value === "string" ? value : (value as { secret?: unknown } | undefined)?.secret;
    if (typeof secret !== "string" || pairOf(sources(), name)) {
      d.todo(
        tokens!,
        ["webhooks", "tokens"],
        name,
        `make this a bearer source "webhooks.sources.${name}: { verify: bearer, secret: ... }" by hand${pairOf(sources(), name) ? " (a source of that name exists)" : ""}`,
      );
      continue;
    }
    moveComments(item, setAtEnd(d.doc, ["webhooks", "sources"], name, { verify: "bearer", secret }));
    tokens!.items.splice(tokens!.items.indexOf(item), 1);
    d.changed(`"webhooks.tokens.${name}" became bearer source "webhooks.sources.${name}"`);
  }
  if (tokens && tokens.items.length === 0) deleteKey(d.doc, webhooks, "tokens");
}

function moveOrchestratorTools(d: Rewrite): void {
  const tools = mapAt(d.doc, ["orchestrator", "tools"]);
  if (!tools) return;
  for (const item of [...tools.items]) {
    const name = String((item.key as { value: unknown }).value);
    const spec = plainValue(item);
    if (pairOf(mapAt(d.doc, ["host_tools"]), name) || typeof spec !== "object" || spec === null) {
      d.todo(
        tools,
        ["orchestrator", "tools"],
        name,
        `declare this tool as "host_tools.${name}" by hand${pairOf(mapAt(d.doc, ["host_tools"]), name) ? " (host_tools already has that name)" : ""}`,
      );
      continue;
    }
    // the tool's own node moves, comments and all; its `run` is split below with the other host tools
    const node = item.value as YAMLMap;
    if (!isMap(node)) continue;
    if (!has(node, "description"))
      node.items.unshift(d.doc.createPair("description", `${name} (migrated from orchestrator.tools)`));
    moveComments(item, setAtEnd(d.doc, ["host_tools"], name, node));
    tools.items.splice(tools.items.indexOf(item), 1);
    d.changed(`"orchestrator.tools.${name}" became "host_tools.${name}" (registers as host_${name})`);
  }
  if (tools.items.length === 0) {
    deleteKey(d.doc, mapAt(d.doc, ["orchestrator"])!, "tools");
    dropIfEmpty(d.doc, ["orchestrator"]);
  }
}

function splitRun(d: Rewrite, tool: YAMLMap, name: string, context: StepContext): void {
  const run = pairOf(tool, "run")?.value;
  const path = ["host_tools", name];
  if (has(tool, "exec") || has(tool, "args")) {
    d.todo(tool, path, "run", '"exec"/"args" are set as well - keep them and delete "run"');
    return;
  }
  const split =
    isScalar(run) && typeof run.value === "string"
      ? splitCommand(run.value, context.env)
      : { reason: '"run" is not a string' };
  if ("reason" in split) {
    d.todo(
      tool,
      path,
      "run",
      `${split.reason} - write "exec" (an absolute executable path) and "args" (one argv element each, $input substitution, no shell), or a script that does it, and delete "run"`,
    );
    return;
  }
  const entries: [string, unknown][] = [["exec", split.exec]];
  if (split.args.length) entries.push(["args", split.args]);
  replaceKey(d.doc, tool, "run", entries);
  const args = tool.get("args", true) as { flow?: boolean } | undefined;
  if (args) args.flow = true;
  d.changed(
    `host_tools.${name}.run became exec: ${split.exec}${split.args.length ? `, args: [${split.args.join(", ")}]` : ""}`,
  );
}
