import { readStringMap } from "../env-map.ts";
import type { HostTool } from "../host-tool-types.ts";
import { bool, checkKeys, oneOf, str, strList, type YamlMap } from "../read.ts";
import { type ConfigFile, formatPath, type KeyPath } from "../source.ts";
import { checkName, entries } from "./read-helpers.ts";

export const HOST_TOOL_INPUT_TYPES = ["string", "number", "integer", "boolean", "path"] as const;
/** Set by svc for every host tool run, so a tool's `env` may not declare them. */
export const HOST_TOOL_SET_ENV = {
  PATH: "the ingress's own PATH",
  WORKTREE: "the caller's run worktree",
} as const;
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
    const input = readInput(f, raw, path);
    let exec = str(f, raw, "exec", path, {
      required: true,
      hint: " - give the explicit path of the executable, e.g. exec: /usr/local/bin/biome",
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
    for (const [index, arg] of args.entries()) {
      checkRefs(arg, [...path, "args", index]);
      checkWholeElement(f, arg, [...path, "args", index]);
    }
    // stdin is data, not argv: a reference may sit anywhere in it
    const stdin = str(f, raw, "stdin", path);
    if (stdin) checkRefs(stdin, [...path, "stdin"]);
    const toolEnv = readStringMap(f, raw, "env", path);
    for (const [variable, what] of Object.entries(HOST_TOOL_SET_ENV)) {
      if (toolEnv && variable in toolEnv) {
        f.report(
          [...path, "env", variable],
          "env_reserved",
          `env "${variable}" of "${formatPath(path)}" is set by svc for every host tool (${what}) - remove it from "${formatPath([...path, "env"])}"`,
        );
      }
    }
    if (description && exec && toolEnv) {
      tools[name] = { name, description, input, exec, args, ...(stdin ? { stdin } : {}), env: toolEnv };
    }
  }
  return tools;
}

function readInput(f: ConfigFile, raw: YamlMap, path: KeyPath): HostTool["input"] {
  const input: HostTool["input"] = {};
  for (const [field, spec] of entries(f, raw, "input", path)) {
    const fieldPath = [...path, "input", field];
    checkKeys(f, spec, fieldPath, ["type", "required", "description", "allow_options"]);
    const type = oneOf(f, spec, "type", fieldPath, HOST_TOOL_INPUT_TYPES, { required: true });
    const required = bool(f, spec, "required", fieldPath) ?? false;
    const description = str(f, spec, "description", fieldPath);
    const allowOptions = bool(f, spec, "allow_options", fieldPath);
    if (type) {
      input[field] = {
        type,
        required,
        ...(description ? { description } : {}),
        ...(allowOptions ? { allowOptions } : {}),
      };
    }
  }
  return input;
}

/**
 * A `$name` in `args` fills one whole argv element: `--file=$path` or `$a$b` would let the value
 * run into other text, where the "-" check and path resolution cannot see what the tool reads.
 */
function checkWholeElement(f: ConfigFile, arg: string, where: KeyPath): void {
  const refs = [...arg.matchAll(ARG_REFERENCE)];
  if (refs.length === 0 || (refs.length === 1 && refs[0]![0] === arg)) return;
  const names = refs.map((ref) => ref[0]);
  // `--opt=$x` becomes the two elements "--opt", "$x", which every option parser reads the same way
  const option = /^(-[^=$]*)=(\$[A-Za-z_][A-Za-z0-9_]*)$/.exec(arg);
  const entries = option ? [option[1]!, option[2]!] : names;
  f.report(
    where,
    "invalid_value",
    `"${formatPath(where)}" mixes ${names.join(", ")} with other text - a $name fills one whole argv element; give each reference an args entry of its own, e.g. [${entries.map((entry) => JSON.stringify(entry)).join(", ")}] instead of ${JSON.stringify(arg)}`,
  );
}
