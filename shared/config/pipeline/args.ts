import { bool, checkKeys, mapping, oneOf, type YamlMap } from "../read.ts";
import type { ConfigFile } from "../source.ts";
import type { PipelineArg } from "../types.ts";

export function readArgs(f: ConfigFile, root: YamlMap): Record<string, PipelineArg> {
  const raw = root.args == null ? {} : mapping(f, root.args, ["args"], " of name to { type, required }");
  const args: Record<string, PipelineArg> = {};
  for (const [name, spec] of Object.entries(raw ?? {})) {
    const path = ["args", name];
    const entry = mapping(f, spec, path, " such as { type: string, required: true }");
    if (!entry) continue;
    checkKeys(f, entry, path, ["type", "required", "description"]);
    const type = oneOf(f, entry, "type", path, ["string", "number", "boolean"] as const, { required: true });
    const required = bool(f, entry, "required", path) ?? false;
    if (type) args[name] = { type, required };
  }
  return args;
}
