import { readChatTarget } from "../daemon/channels.ts";
import { bool, checkKeys, isMapping, mapping, oneOf, quote, str, type YamlMap } from "../read.ts";
import type { ConfigFile } from "../source.ts";
import type { OutputBinding } from "../types.ts";
import type { PipelineDraft } from "./draft.ts";

/** Output handlers and the schema id `result.schema.properties.<key>.$ref` must name exactly. */
export const OUTPUT_HANDLERS: Readonly<Record<string, { schema: string; family: "codehost" | "chat" }>> = {
  "codehost.comment": { schema: "svc://schemas/codehost/comment/v1", family: "codehost" },
  "codehost.review": { schema: "svc://schemas/codehost/review/v1", family: "codehost" },
  "codehost.review-comment-reply": {
    schema: "svc://schemas/codehost/review-comment-reply/v1",
    family: "codehost",
  },
  "codehost.review-replies": { schema: "svc://schemas/codehost/review-replies/v1", family: "codehost" },
  "chat.message": { schema: "svc://schemas/chat/message/v1", family: "chat" },
};

export function readResult(f: ConfigFile, root: YamlMap): { schema: Record<string, unknown> } | undefined {
  if (root.result == null) return undefined;
  const raw = mapping(f, root.result, ["result"], " holding schema");
  if (!raw) return undefined;
  checkKeys(f, raw, ["result"], ["schema"]);
  if (raw.schema == null) {
    f.report(
      ["result", "schema"],
      "required",
      '"result.schema" is required - declare the complete structured result as a JSON schema object',
    );
    return undefined;
  }
  const schema = mapping(f, raw.schema, ["result", "schema"], " (a JSON schema object)");
  return schema ? { schema } : undefined;
}

export function readOutputs(f: ConfigFile, root: YamlMap): Record<string, OutputBinding> {
  const raw =
    root.outputs == null ? {} : mapping(f, root.outputs, ["outputs"], " of result key to { handler }");
  const outputs: Record<string, OutputBinding> = {};
  for (const [key, spec] of Object.entries(raw ?? {})) {
    const path = ["outputs", key];
    const entry = mapping(f, spec, path, " such as { handler: codehost.review }");
    if (!entry) continue;
    checkKeys(f, entry, path, ["handler", "config", "target", ...Object.keys(PUBLISHING_OPTIONS)]);
    const handler = str(f, entry, "handler", path, {
      required: true,
      hint: ` - one of ${Object.keys(OUTPUT_HANDLERS).join(", ")}`,
    });
    if (!handler) continue;
    const known = OUTPUT_HANDLERS[handler];
    if (!known) {
      f.report(
        [...path, "handler"],
        "unknown_handler",
        `"outputs.${key}.handler" names unknown handler ${quote(handler)} - use one of ${Object.keys(OUTPUT_HANDLERS).join(", ")} (upsert-comment, diff and issue-tracker outputs were removed)`,
      );
      continue;
    }
    if (known.family === "codehost") {
      if (entry.config !== undefined) {
        f.report(
          [...path, "config"],
          "output_config_refused",
          `"outputs.${key}.config" is refused - the code-host handler ${handler} takes no config block; delete it${STICKY_HANDLERS.includes(handler) ? " (sticky, progress and resolve_outdated are written beside handler)" : ""}`,
        );
        continue;
      }
      const options = readPublishingOptions(f, entry, key, handler);
      const target = readTarget(f, entry, key, handler);
      if (options && target !== null) outputs[key] = { handler, ...options, ...(target ? { target } : {}) };
    } else {
      if (entry.config == null) {
        f.report(
          [...path, "config"],
          "required",
          `"outputs.${key}.config" is required for ${handler} - write config: { bot: <name from channels.chat.bots>, channel: <channel id> }`,
        );
        continue;
      }
      const config = mapping(f, entry.config, [...path, "config"], " such as { bot, channel }");
      // bots are checked against daemon.yaml in resolvePipeline
      const chat = config && readChatTarget(f, config, [...path, "config"], undefined);
      const target = readTarget(f, entry, key, handler);
      if (readPublishingOptions(f, entry, key, handler) && chat && target !== null)
        outputs[key] = { handler, config: chat };
    }
  }
  return outputs;
}

/** Binding keys beside `handler` (the contract refuses `config` on the code-host family), and who takes them. */
const STICKY_HANDLERS = ["codehost.comment", "codehost.review"];
const PUBLISHING_OPTIONS: Readonly<Record<string, readonly string[]>> = {
  sticky: STICKY_HANDLERS,
  progress: STICKY_HANDLERS,
  resolve_outdated: ["codehost.review"],
};

/**
 * `target` (docs/outputs.md): where a `codehost.comment` may go. `event` (the default): the event's
 * own pull request or issue only, whatever the result names; `any`: the repository and number the
 * result names (a scheduled or chat-fired pipeline that comments on issues), never for an
 * outsider's run. Undefined: not set; null: wrong (reported).
 */
function readTarget(f: ConfigFile, entry: YamlMap, key: string, handler: string): "any" | undefined | null {
  if (entry.target === undefined) return undefined;
  const path = ["outputs", key];
  if (handler !== "codehost.comment") {
    f.report(
      [...path, "target"],
      "output_option_refused",
      `"outputs.${key}.target" is refused - only codehost.comment takes it (${handler} always goes to the event's own pull request, or to its configured channel); delete it`,
    );
    return null;
  }
  const value = oneOf(f, entry, "target", path, ["event", "any"] as const);
  if (value === undefined) return null;
  return value === "any" ? "any" : undefined;
}

/**
 * `sticky`, `progress` and `resolve_outdated` (docs/outputs.md): booleans, each on the handlers
 * that can honour it, `progress` only with `sticky`. Undefined when one of them is wrong.
 */
function readPublishingOptions(
  f: ConfigFile,
  entry: YamlMap,
  key: string,
  handler: string,
): Pick<OutputBinding, "sticky" | "progress" | "resolveOutdated"> | undefined {
  const path = ["outputs", key];
  let ok = true;
  const values: Record<string, boolean> = {};
  for (const [option, handlers] of Object.entries(PUBLISHING_OPTIONS)) {
    if (entry[option] === undefined) continue;
    if (!handlers.includes(handler)) {
      f.report(
        [...path, option],
        "output_option_refused",
        `"outputs.${key}.${option}" is refused - ${handler} does not take it, only ${handlers.join(" and ")}; delete it`,
      );
      ok = false;
      continue;
    }
    const value = bool(f, entry, option, path);
    if (value === undefined) ok = false;
    else values[option] = value;
  }
  if (values.progress && !values.sticky) {
    f.report(
      [...path, "progress"],
      "output_option_refused",
      `"outputs.${key}.progress" needs "outputs.${key}.sticky: true" - the progress note is written into the sticky comment; add sticky: true or delete progress`,
    );
    ok = false;
  }
  if (!ok) return undefined;
  return {
    ...(values.sticky ? { sticky: true } : {}),
    ...(values.progress ? { progress: true } : {}),
    ...(values.resolve_outdated ? { resolveOutdated: true } : {}),
  };
}

export function checkOutputsAgainstSchema(f: ConfigFile, draft: PipelineDraft): void {
  const keys = Object.keys(draft.outputs);
  if (keys.length === 0) return;
  if (!draft.result) {
    f.report(
      ["outputs"],
      "outputs_without_schema",
      '"outputs" is refused without "result.schema" - declare result.schema with one property per output key, each { $ref: <handler schema id> }',
    );
    return;
  }
  const properties = draft.result.schema.properties;
  for (const key of keys) {
    const handler = draft.outputs[key]!.handler;
    const expected = OUTPUT_HANDLERS[handler]!.schema;
    const property = isMapping(properties) ? properties[key] : undefined;
    const ref = isMapping(property) ? property.$ref : undefined;
    if (ref === expected && isMapping(property) && Object.keys(property).length === 1) continue;
    f.report(
      ["result", "schema", "properties", key],
      "output_schema_mismatch",
      `"result.schema.properties.${key}" must reference exactly the schema of handler ${handler} - write ${key}: { $ref: ${expected} }`,
    );
  }
}
