import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { HostTool } from "../../shared/config/host-tool-types.ts";
import { type HostToolInput, type PreparedCall, prepareHostToolCall } from "./host-tool-call.ts";

export const HOST_TOOL_TIMEOUT_MS = 120_000;
/** per stream: a tool printing more is stopped and its output cut here */
export const HOST_TOOL_MAX_OUTPUT_BYTES = 1024 * 1024;

export interface HostToolResult {
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  /** stopped at the timeout, or for printing more than the output cap */
  stopped?: "timeout" | "output_cap";
}

/**
 * Runs the tool's explicit executable with no shell, in the ingress, as the ingress user. Its inputs
 * are checked first (host-tool-call.ts; a refused input throws `HostToolRefused` and nothing runs).
 * The working directory is a fresh empty directory removed afterwards, never the checkout: a tool
 * resolving anything relative to its cwd (npx and `node_modules/.bin`, `.npmrc`, `.git/config`)
 * finds nothing of the pull request. The caller's worktree reaches the tool only as WORKTREE and
 * as resolved `path` inputs. Stopped at the timeout or when it prints more than the cap.
 */
export async function runHostTool(
  tool: HostTool,
  input: HostToolInput,
  worktree?: string,
): Promise<HostToolResult> {
  const call = await prepareHostToolCall(tool, input, worktree);
  const cwd = await mkdtemp(join(tmpdir(), "svc-host-tool-"));
  try {
    return await spawnTool(tool, call, cwd);
  } finally {
    // a child the tool left behind may still be writing there; the tool's answer stands, and the
    // directory is private to the ingress user (mkdtemp: 0700) until the OS clears its temp directory
    await rm(cwd, { recursive: true, force: true }).catch(() => {});
  }
}

function spawnTool(tool: HostTool, call: PreparedCall, cwd: string): Promise<HostToolResult> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      tool.exec,
      call.argv,
      {
        shell: false,
        timeout: HOST_TOOL_TIMEOUT_MS,
        maxBuffer: HOST_TOOL_MAX_OUTPUT_BYTES,
        env: call.env,
        encoding: "utf8",
        cwd,
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
    child.stdin?.end(call.stdin);
  });
}
