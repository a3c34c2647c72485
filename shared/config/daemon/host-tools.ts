import { readStringMap } from "../env-map.ts";
import { bool, checkKeys, oneOf, str, strList, type YamlMap } from "../read.ts";
import { type ConfigFile, formatPath, type KeyPath } from "../source.ts";
import type { HostTool } from "../types.ts";
import { checkName, entries } from "./read-helpers.ts";

export const HOST_TOOL_INPUT_TYPES = ["string", "number", "integer", "boolean"] as const;
const TOOL_NAME = /^[A-Za-z0-9_-]+$/;
const ARG_REFERENCE = /\$([A-Za-z_][A-Za-z0-9_]*)/g;

export function readHostTools(f: ConfigFile, root: YamlMap): Record<string, HostTool> {
  const tools: Record<string, HostTool> = {};
  for (const [name, raw] of entries(f, root, "host_tools", [])) {
    const path = ["host_tools", name];
    if (!checkName(f, path, name, TOOL_NAME, "host tool")) continue;
    checkKeys(f, raw, path, ["description", "input", "exec", "args", "stdin", "env"]);
    const description = str(f, raw, "description", path, {
      required: true,
      hint: " - say what the tool does; the agent reads it",
    });
    const input: HostTool["input"] = {};
    for (const [field, spec] of entries(f, raw, "input", path)) {
      const fieldPath = [...path, "input", field];
      checkKeys(f, spec, fieldPath, ["type", "required", "description"]);
      const type = oneOf(f, spec, "type", fieldPath, HOST_TOOL_INPUT_TYPES, { required: true });
      const required = bool(f, spec, "required", fieldPath) ?? false;
      const description = str(f, spec, "description", fieldPath);
      if (type) input[field] = { type, required, ...(description ? { description } : {}) };
    }
    let exec = str(f, raw, "exec", path, {
      required: true,
      hint: " - give the explicit path of the executable, e.g. exec: /usr/bin/npx",
    });
    if (exec && (!exec.startsWith("/") || exec.includes("$"))) {
      f.report(
        [...path, "exec"],
        "invalid_value",
        `"${formatPath([...path, "exec"])}" must be an explicit absolute executable path without input references - pass inputs through "args"`,
      );
      exec = undefined;
    }
    const args = strList(f, raw, "args", path) ?? [];
    const declared = Object.keys(input);
    const checkRefs = (text: string, where: KeyPath) => {
      for (const match of text.matchAll(ARG_REFERENCE)) {
        if (!declared.includes(match[1]!)) {
          f.report(
            where,
            "invalid_value",
            `"${formatPath(where)}" references $${match[1]}, which is not a field of "${formatPath([...path, "input"])}" - declare it there or remove the reference`,
          );
        }
      }
    };
    for (const [index, arg] of args.entries()) checkRefs(arg, [...path, "args", index]);
    const stdin = str(f, raw, "stdin", path);
    if (stdin) checkRefs(stdin, [...path, "stdin"]);
    const toolEnv = readStringMap(f, raw, "env", path);
    if (description && exec && toolEnv) {
      tools[name] = { name, description, input, exec, args, ...(stdin ? { stdin } : {}), env: toolEnv };
    }
  }
  return tools;
}
