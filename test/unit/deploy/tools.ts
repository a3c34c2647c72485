import { spawnSync } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { delimiter, join, resolve } from "node:path";

/** The repository root, whatever directory vitest was started from. */
export const ROOT = resolve(import.meta.dirname, "../../..");
export const DEPLOY = join(ROOT, "deploy");

/** The absolute path of an executable on PATH, or undefined when it is not installed. */
export function findTool(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not in this directory
    }
  }
  return undefined;
}

/**
 * External checks run only where the tool is installed (CI's clean clone may not have it); the
 * in-process checks of the same file always run. Say so loudly instead of passing quietly.
 */
export function reportMissingTool(tool: string, check: string): void {
  process.stderr.write(
    `\n[deploy] ${tool} is not installed: skipped "${check}" (the in-process checks still ran). ` +
      `Install it to run this check (see docs/operations.md).\n`,
  );
}

export interface ToolResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

export function runTool(
  command: string,
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string } = {},
): ToolResult {
  const result = spawnSync(command, args, {
    cwd: options.cwd ?? ROOT,
    env: options.env ?? process.env,
    input: options.input,
    encoding: "utf8",
    timeout: 60_000,
  });
  if (result.error) throw result.error;
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}
