import { isMap, type YAMLMap } from "yaml";
import { mapAt, markTodo, pairOf, plainValue, setAtEnd } from "../edit.ts";
import type { Rewrite } from "./step.ts";

/** What a pipeline (before 0.6.5) or `ask` (before 0.10.0) said about the model it runs on. */
export interface LegacyTarget {
  runtime?: string;
  model?: string;
  credential?: string;
}

const slug = (text: string) =>
  text
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, "-")
    .replace(/^-+|-+$/g, "") || "target";

/**
 * The name of a target of daemon.yaml's `targets:` map for `legacy`: an existing one with the same
 * runtime and model, else a new entry. A new entry svc cannot run as written (a runtime svc does
 * not have, a command without argv, an openai target without base_url, a claude-code or codex
 * target without model or credential, a credential without its secret) carries a to-do saying
 * what to add.
 */
export function namedTarget(d: Rewrite, legacy: LegacyTarget, usedBy: string): string {
  const targets = mapAt(d.doc, ["targets"]);
  for (const item of targets?.items ?? []) {
    const spec = plainValue(item) as Record<string, unknown> | undefined;
    if (spec && spec.runtime === legacy.runtime && spec.model === legacy.model && !legacy.credential)
      return String((item.key as { value: unknown }).value);
  }
  const base = slug([legacy.runtime, legacy.model].filter(Boolean).join("-"));
  let name = base;
  for (let n = 2; pairOf(targets, name); n++) name = `${base}-${n}`;
  const spec: Record<string, unknown> = {};
  if (legacy.runtime) spec.runtime = legacy.runtime;
  if (legacy.model) spec.model = legacy.model;
  if (legacy.credential) spec.credentials = [{ name: legacy.credential }];
  setAtEnd(d.doc, ["targets"], name, spec);
  d.changed(`added target "${name}" for ${usedBy}`);
  const missing = missingParts(legacy);
  const map = mapAt(d.doc, ["targets"]) as YAMLMap;
  if (missing.length && isMap(pairOf(map, name)?.value)) {
    const text = `target "${name}" (made for ${usedBy}) needs ${missing.join("; ")}`;
    markTodo(map, name, text);
  }
  return name;
}

function missingParts(legacy: LegacyTarget): string[] {
  const missing: string[] = [];
  const agentCli = legacy.runtime === "claude-code" || legacy.runtime === "codex";
  if (legacy.runtime === "command") missing.push('"command", the agent CLI as an argv list');
  else if (legacy.runtime === "openai") missing.push('"base_url" of the OpenAI-compatible endpoint');
  else if (!agentCli)
    missing.push(
      `a runtime svc runs: "runtime: command" with "command: [<agent CLI>, ...]" (for ${legacy.runtime ?? "the old default runtime"}), "runtime: openai" with "base_url", or "runtime: claude-code" / "runtime: codex"`,
    );
  if ((legacy.runtime === "openai" || agentCli) && !legacy.model) missing.push('"model"');
  if (agentCli && !legacy.credential)
    missing.push('"credentials": at least one { name, secret | secret_ref }');
  if (legacy.credential)
    missing.push(
      `the secret of credential "${legacy.credential}": add "secret: \${ENV_NAME}" or "secret_ref" to it`,
    );
  return missing;
}
