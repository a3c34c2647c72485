import { realpath, stat } from "node:fs/promises";
import { delimiter, isAbsolute, resolve, sep } from "node:path";
import type { HostTool } from "../../shared/config/host-tool-types.ts";

export type HostToolInput = Record<string, string | number | boolean>;

/** A call refused before the tool runs; the message names the tool and the input field. */
export class HostToolRefused extends Error {}

/** What the tool is started with, every input checked. */
export interface PreparedCall {
  argv: string[];
  stdin: string;
  env: Record<string, string>;
}

const WHOLE_REFERENCE = /^\$([A-Za-z_][A-Za-z0-9_]*)$/;
const PLACEHOLDER = /\$([A-Za-z_][A-Za-z0-9_]*)/g;

/**
 * Turns a checked input into the tool's argv, stdin and environment. A `$name` args entry becomes
 * exactly that value (the loader refuses entries mixing a reference with other text), and a value
 * starting with "-" is refused unless its field declares `allow_options`, so input cannot become an
 * option of the tool (`--upload-pack=…`). A `path` field is resolved, links followed, inside the
 * caller's worktree. The environment is the declared `env`, the ingress's own PATH and WORKTREE:
 * nothing of the checkout can put an executable on the tool's PATH.
 */
export async function prepareHostToolCall(
  tool: HostTool,
  input: HostToolInput,
  worktree: string | undefined,
): Promise<PreparedCall> {
  const root = await liveWorktree(worktree);
  const values: Record<string, string> = {};
  for (const [field, raw] of Object.entries(input)) {
    const value = String(raw);
    if (value.includes("\0"))
      throw new HostToolRefused(`host tool ${tool.name}: input ${field} contains a NUL byte`);
    values[field] =
      tool.input[field]?.type === "path" ? await insideWorktree(tool, field, value, worktree, root) : value;
  }
  const argv = tool.args.map((arg) => {
    const field = WHOLE_REFERENCE.exec(arg)?.[1];
    if (field === undefined) return arg;
    const value = values[field] ?? "";
    if (value.startsWith("-") && !tool.input[field]?.allowOptions) {
      throw new HostToolRefused(
        `host tool ${tool.name}: input ${field} may not start with "-" (it would be read as an option); declare allow_options: true on input ${field} to allow it`,
      );
    }
    return value;
  });
  // stdin is data the tool reads, never argv: a reference may sit anywhere in it
  const stdin =
    tool.stdin === undefined ? "" : tool.stdin.replace(PLACEHOLDER, (_, name: string) => values[name] ?? "");
  const path = ingressPath();
  const env: Record<string, string> = {
    ...tool.env,
    ...(path ? { PATH: path } : {}),
    ...(root ? { WORKTREE: root } : {}),
  };
  return { argv, stdin, env };
}

/**
 * The ingress's PATH without relative entries (an empty entry is the working directory too): a
 * tool that changes into WORKTREE and runs a command by name must not find the checkout's
 * `node_modules/.bin` through a developer's `PATH=node_modules/.bin:…`.
 */
function ingressPath(): string {
  return (process.env.PATH ?? "")
    .split(delimiter)
    .filter((entry) => isAbsolute(entry))
    .join(delimiter);
}

/** The worktree's real path, or undefined when the caller has none or it is gone (the run ended). */
async function liveWorktree(worktree: string | undefined): Promise<string | undefined> {
  if (!worktree) return undefined;
  try {
    const real = await realpath(worktree);
    return (await stat(real)).isDirectory() ? real : undefined;
  } catch {
    // ENOENT and friends: a removed checkout is the same as none, and path inputs are refused
    return undefined;
  }
}

/** `value` resolved against the worktree, following every link; refused unless it stays inside. */
async function insideWorktree(
  tool: HostTool,
  field: string,
  value: string,
  worktree: string | undefined,
  root: string | undefined,
): Promise<string> {
  const refuse = (why: string) => new HostToolRefused(`host tool ${tool.name}: input ${field} ${why}`);
  if (!root) {
    throw refuse(
      worktree
        ? "is a path in the run's worktree, and that worktree is gone (the run has ended)"
        : "is a path in the caller's run worktree, and this caller has none (only a run's token does)",
    );
  }
  // one answer for missing and outside, so the refusal cannot tell the caller which host files exist
  const refusal = refuse(
    `must name an existing file or directory inside the run's worktree (links followed); ${JSON.stringify(value)} does not`,
  );
  let real: string;
  try {
    real = await realpath(isAbsolute(value) ? value : resolve(root, value));
  } catch {
    throw refusal;
  }
  if (real !== root && !real.startsWith(root + sep)) throw refusal;
  return real;
}
