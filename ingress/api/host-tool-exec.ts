import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import type { HostTool } from "../../shared/config/types.ts";

const PLACEHOLDER = /\$([A-Za-z_][A-Za-z0-9_]*)/g;
export const HOST_TOOL_TIMEOUT_MS = 120_000;
/** per stream: a tool printing more is stopped and its output cut here */
export const HOST_TOOL_MAX_OUTPUT_BYTES = 1024 * 1024;

export type HostToolInput = Record<string, string | number | boolean>;

export interface HostToolResult {
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  /** stopped at the timeout, or for printing more than the output cap */
  stopped?: "timeout" | "output_cap";
}

function substitute(text: string, input: HostToolInput): string {
  return text.replace(PLACEHOLDER, (_, name: string) => (name in input ? String(input[name]) : ""));
}

/**
 * Runs the tool's explicit executable with no shell: each `args` entry becomes exactly one argv
 * element after `$name` substitution, so input can never add arguments or shell syntax. The child
 * sees the tool's declared `env` and nothing of the daemon's environment, runs in `cwd` (the
 * caller's worktree), and is stopped at the timeout or when it prints more than the cap.
 */
export function runHostTool(tool: HostTool, input: HostToolInput, cwd?: string): Promise<HostToolResult> {
  const argv = tool.args.map((arg) => substitute(arg, input));
  return new Promise((resolve, reject) => {
    const child = execFile(
      tool.exec,
      argv,
      {
        shell: false,
        timeout: HOST_TOOL_TIMEOUT_MS,
        maxBuffer: HOST_TOOL_MAX_OUTPUT_BYTES,
        env: { ...tool.env },
        encoding: "utf8",
        // a run whose checkout is gone (removed as the run ended) runs in the daemon's directory
        ...(cwd && existsSync(cwd) ? { cwd } : {}),
      },
      (error, stdout, stderr) => {
        const code = (error as NodeJS.ErrnoException | null)?.code;
        if (error && typeof code === "string" && !child.signalCode) {
          if (code === "ENOENT" || code === "EACCES") {
            reject(new Error(`host tool ${tool.name}: cannot run ${tool.exec} (${code})`));
            return;
          }
        }
        const stopped =
          code === "ERR_CHILD_PROCESS_STDIO_MAXBUFFER"
            ? "output_cap"
            : error && (error as { killed?: boolean }).killed
              ? "timeout"
              : undefined;
        resolve({
          exitCode: child.exitCode,
          signal: child.signalCode,
          stdout: String(stdout),
          stderr: String(stderr),
          ...(stopped ? { stopped } : {}),
        });
      },
    );
    // a tool that never reads stdin closes the pipe first; that is not a failure of the tool
    child.stdin?.on("error", () => {});
    child.stdin?.end(tool.stdin === undefined ? "" : substitute(tool.stdin, input));
  });
}
