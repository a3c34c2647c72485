import { isMap, isScalar, type YAMLMap } from "yaml";
import { deleteKey, dropIfEmpty, has, mapAt, pairOf, plainValue, replaceKey, setAtEnd } from "../edit.ts";
import { convertOutput } from "./outputs.ts";
import { daemon, type Rewrite, rewrites, type Step } from "./step.ts";
import { namedTarget } from "./targets.ts";

/**
 * 0.10.0: `output` replaced by `result` and `outputs`; `ask.targets` required;
 * `knowledge.retrieval.rewrite.target` became `targets`; circuit-breaker chat escalation needs
 * `{ bot, channel }`; skill `version` moved under `metadata`.
 */
export const v0_10_0: Step = {
  release: "0.10.0",
  title:
    '"output" → "result.schema" + "outputs"; "ask.target" → "ask.targets"; "rewrite.target" → "rewrite.targets"; skill "version" → "metadata.version"; escalation chat → { bot, channel }',
  apply(tree) {
    const d = daemon(tree, this.release);
    const bots = d
      ? Object.keys((plainValue(pairOf(mapAt(d.doc, ["channels", "chat"]), "bots")) ?? {}) as object)
      : [];
    const pipelines = rewrites(tree, this.release, "pipelines/");
    for (const p of pipelines) {
      const root = mapAt(p.doc, []);
      if (root && has(root, "output")) outputs(p, root, plainValue(pairOf(root, "output")), bots);
    }
    if (d) {
      defaultsOutput(d, pipelines, bots);
      ask(d);
      const rewrite = mapAt(d.doc, ["knowledge", "retrieval", "rewrite"]);
      if (rewrite && has(rewrite, "target")) toList(d, rewrite, ["knowledge", "retrieval", "rewrite"]);
      escalation(d, bots);
    }
    for (const s of rewrites(tree, this.release, "skills/").filter((r) => r.file.endsWith("/SKILL.md"))) {
      const meta = mapAt(s.doc, []);
      if (!meta || !has(meta, "version")) continue;
      if (mapAt(s.doc, ["metadata"]) && has(mapAt(s.doc, ["metadata"]), "version")) {
        s.todo(
          meta,
          [],
          "version",
          'both "version" and "metadata.version" are set - keep "metadata.version" and delete "version"',
        );
        continue;
      }
      const version = plainValue(pairOf(meta, "version"));
      if (mapAt(s.doc, ["metadata"])) {
        deleteKey(s.doc, meta, "version");
        setAtEnd(s.doc, ["metadata"], "version", version);
      } else replaceKey(s.doc, meta, "version", [["metadata", { version }]]);
      s.changed(`skill "version: ${version}" moved to "metadata.version"`);
    }
  },
};

function outputs(p: Rewrite, root: YAMLMap, value: unknown, bots: readonly string[]): boolean {
  const converted = convertOutput(value, bots);
  if ("reason" in converted || has(root, "result") || has(root, "outputs")) {
    const why = "reason" in converted ? converted.reason : '"result" or "outputs" is set as well';
    if (has(root, "output"))
      p.todo(
        root,
        [],
        "output",
        `${why} - declare "result.schema" and "outputs" by hand (handlers: codehost.comment, codehost.review, codehost.review-comment-reply, codehost.review-replies, chat.message) and delete "output"`,
      );
    return false;
  }
  const entries: [string, unknown][] = [
    ["result", converted.result],
    ["outputs", converted.outputs],
  ];
  if (has(root, "output")) replaceKey(p.doc, root, "output", entries);
  else for (const [key, inner] of entries) setAtEnd(p.doc, [], key, inner);
  (p.doc.getIn(["result", "schema", "required"], true) as { flow?: boolean }).flow = true;
  for (const key of Object.keys(converted.outputs)) {
    const config = p.doc.getIn(["outputs", key, "config"], true) as { flow?: boolean } | undefined;
    if (config) config.flow = true;
  }
  p.changed(
    `output became result.schema + outputs (${Object.entries(converted.outputs)
      .map(([key, binding]) => `${key}: ${binding.handler}`)
      .join(", ")})`,
  );
  return true;
}

/** `defaults.output` applied to every pipeline that declared no output of its own. */
function defaultsOutput(d: Rewrite, pipelines: Rewrite[], bots: readonly string[]): void {
  const defaults = mapAt(d.doc, ["defaults"]);
  if (!defaults || !has(defaults, "output")) return;
  const value = plainValue(pairOf(defaults, "output"));
  const converted = convertOutput(value, bots);
  if ("reason" in converted) {
    d.todo(
      defaults,
      ["defaults"],
      "output",
      `${converted.reason} - declare "result.schema" and "outputs" in each pipeline file and delete "defaults.output"`,
    );
    return;
  }
  for (const p of pipelines) {
    const root = mapAt(p.doc, []);
    if (!root || has(root, "result") || has(root, "outputs") || has(root, "output")) continue;
    outputs(p, root, value, bots);
  }
  deleteKey(d.doc, defaults, "output");
  dropIfEmpty(d.doc, ["defaults"]);
  d.changed('deleted "defaults.output" after giving its output to each pipeline without one');
}

function ask(d: Rewrite): void {
  const askMap = mapAt(d.doc, ["ask"]);
  if (!askMap) return;
  if (has(askMap, "target")) toList(d, askMap, ["ask"]);
  if (!has(askMap, "runtime") && !has(askMap, "model")) return;
  if (has(askMap, "targets")) {
    const key = has(askMap, "runtime") ? "runtime" : "model";
    d.todo(
      askMap,
      ["ask"],
      key,
      '"ask.targets" is set as well - make sure it names the target you want and delete "runtime" and "model"',
    );
    return;
  }
  const text = (key: string) => {
    const value = pairOf(askMap, key)?.value;
    return isScalar(value) && value.value !== null ? String(value.value) : undefined;
  };
  const runtime = text("runtime");
  const model = text("model");
  const name = namedTarget(d, { ...(runtime ? { runtime } : {}), ...(model ? { model } : {}) }, "ask");
  const first = has(askMap, "runtime") ? "runtime" : "model";
  replaceKey(d.doc, askMap, first, [["targets", [name]]]);
  if (has(askMap, "model")) deleteKey(d.doc, askMap, "model");
  (askMap.get("targets", true) as { flow?: boolean }).flow = true;
  d.changed(`"ask.runtime"/"ask.model" became ask.targets: [${name}]`);
}

/** `<path>.target: x` → `<path>.targets: [x]`, where it stood. */
function toList(d: Rewrite, map: YAMLMap, path: string[]): void {
  const value = plainValue(pairOf(map, "target"));
  if (has(map, "targets") || typeof value !== "string") {
    d.todo(
      map,
      path,
      "target",
      `${has(map, "targets") ? '"targets" is set as well' : '"target" is not a name'} - list the target names under "targets" and delete "target"`,
    );
    return;
  }
  replaceKey(d.doc, map, "target", [["targets", [value]]]);
  (map.get("targets", true) as { flow?: boolean }).flow = true;
  d.changed(
    `"${[...path, "target"].join(".")}: ${value}" became "${[...path, "targets"].join(".")}: [${value}]"`,
  );
}

function escalation(d: Rewrite, bots: readonly string[]): void {
  const escalate = mapAt(d.doc, ["queue", "circuit_breaker", "escalate"]);
  const chat = pairOf(escalate, "chat")?.value;
  if (!escalate || !isScalar(chat) || typeof chat.value !== "string" || isMap(chat)) return;
  const path = ["queue", "circuit_breaker", "escalate"];
  if (bots.length !== 1) {
    d.todo(
      escalate,
      path,
      "chat",
      `write chat: { bot: <name from channels.chat.bots>, channel: ${chat.value} }${bots.length ? ` (bots: ${bots.join(", ")})` : " and declare the bot in channels.chat.bots"}`,
    );
    return;
  }
  replaceKey(d.doc, escalate, "chat", [["chat", { bot: bots[0], channel: chat.value }]]);
  (escalate.get("chat", true) as { flow?: boolean }).flow = true;
  d.changed(`escalate.chat "${chat.value}" became { bot: ${bots[0]}, channel: ${chat.value} }`);
}
