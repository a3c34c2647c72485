import { open, stat } from "node:fs/promises";
import type { CommandTarget } from "../../shared/config/types.ts";

/** How much of the agent's output an `auth_failure.stderr` pattern is matched against (its tail). */
const MATCHED_BYTES = 64 * 1024;

/** The transcript's size now: the agent's output starts there. */
export async function transcriptSize(file: string): Promise<number> {
  try {
    return (await stat(file)).size;
  } catch {
    return 0;
  }
}

/** The transcript from `from` on (at most its last 64 KiB): what this agent run printed. */
export async function outputSince(file: string, from: number): Promise<string> {
  const handle = await open(file, "r");
  try {
    const size = (await handle.stat()).size;
    const start = Math.max(from, size - MATCHED_BYTES);
    const buffer = Buffer.alloc(Math.max(size - start, 0));
    await handle.read(buffer, 0, buffer.length, start);
    return buffer.toString("utf8");
  } finally {
    await handle.close();
  }
}

/**
 * Whether the agent's exit is the target's declared authentication failure: an exit code listed
 * in `auth_failure.exit_codes`, or output matching `auth_failure.stderr` (case-insensitive) on a
 * non-zero exit. The transcript interleaves stdout and stderr, so the pattern sees both.
 */
export function authFailureReason(
  target: CommandTarget,
  exitCode: number | null,
  output: string,
): string | undefined {
  const rule = target.authFailure;
  if (!rule || exitCode === 0 || exitCode === null) return undefined;
  if (rule.exitCodes.includes(exitCode)) return `agent exited with ${exitCode} (auth_failure.exit_codes)`;
  if (rule.stderr && new RegExp(rule.stderr, "i").test(output))
    return `agent output matched auth_failure.stderr (exit ${exitCode})`;
  return undefined;
}
