import { accessSync, constants } from "node:fs";
import { delimiter, isAbsolute, join } from "node:path";

/** Whether `path` names a file this process may execute. */
export function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false; // missing, or not executable by us: the same answer for a lookup
  }
}

/**
 * Where the shell would find the bare command `name` on `env.PATH`: the first absolute PATH entry
 * holding an executable of that name. A name with a slash is not looked up, and relative PATH
 * entries are skipped, since they would depend on the directory of whoever runs the command.
 */
export function findOnPath(name: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (name.includes("/")) return undefined;
  for (const dir of (env.PATH ?? "").split(delimiter)) {
    if (!dir || !isAbsolute(dir)) continue;
    const candidate = join(dir, name);
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}
