import { spawn } from "node:child_process";

/**
 * git as the checkout runs it: never prompting, never reading the operator's global or system
 * configuration, never learning svc's environment. Credentials reach git only through `env`
 * (`GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_n`/`GIT_CONFIG_VALUE_n`, credentials.ts): never argv, where
 * any user of the host reads them, and never a file.
 */
export function gitEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin",
    HOME: process.env.HOME ?? "/",
    GIT_TERMINAL_PROMPT: "0",
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    // no ssh prompt either: an ssh URL of a submodule fails instead of waiting for a key's passphrase
    GIT_SSH_COMMAND: "ssh -o BatchMode=yes",
    // git-lfs must not fetch on checkout behind our back: lfs.ts pulls explicitly, as the run's identity
    GIT_LFS_SKIP_SMUDGE: "1",
    ...extra,
  };
}

export class GitError extends Error {
  readonly stderr: string;
  readonly exitCode: number | null;
  constructor(args: string[], exitCode: number | null, stderr: string) {
    super(`git ${verb(args)} failed (exit ${exitCode}): ${lastLines(stderr)}`);
    this.stderr = stderr;
    this.exitCode = exitCode;
  }
}

/** The subcommand of an argv, past the global options that take a value (`-c x`, `--git-dir x`). */
function verb(args: string[]): string {
  for (let i = 0; i < args.length; i++) {
    if (args[i] === "-c" || args[i] === "--git-dir" || args[i] === "-C") i++;
    else if (!args[i]!.startsWith("-")) return args[i]!;
  }
  return "";
}

function lastLines(text: string): string {
  const lines = text.trim().split("\n").filter(Boolean);
  return lines.slice(-3).join(" / ").slice(0, 600) || "no message";
}

export interface GitOptions {
  cwd?: string;
  /** added to gitEnv() for this command only: credentials, GIT_DIR */
  env?: Record<string, string>;
  signal?: AbortSignal;
  /** written to git's stdin, which is closed after it */
  input?: string;
}

/**
 * Runs git and resolves with its stdout; a non-zero exit rejects with a GitError carrying stderr.
 * Output is read as it comes (a rev-list of a large history is megabytes), not buffered by a limit.
 */
export function git(args: string[], options: GitOptions = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn("git", args, {
      cwd: options.cwd,
      env: gitEnv(options.env),
      stdio: [options.input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
      ...(options.signal ? { signal: options.signal } : {}),
    });
    if (options.input !== undefined) child.stdin?.end(options.input);
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout?.on("data", (chunk: Buffer) => out.push(chunk));
    child.stderr?.on("data", (chunk: Buffer) => err.push(chunk));
    child.on("error", (error) => reject(error));
    child.on("close", (code) => {
      const stderr = Buffer.concat(err).toString("utf8");
      if (code === 0) resolve(Buffer.concat(out).toString("utf8"));
      else reject(new GitError(args, code, stderr));
    });
  });
}

/** Whether the repository at `gitDir` holds `object` (a commit id), without asking any remote. */
export async function hasCommit(gitDir: string, object: string): Promise<boolean> {
  return (await commitsHeld(gitDir, [object])).has(object);
}

/** Which of `objects` (commit ids) the repository at `gitDir` holds: one git process for all of them. */
export async function commitsHeld(gitDir: string, objects: string[]): Promise<Set<string>> {
  if (objects.length === 0) return new Set();
  const answer = await git(["--git-dir", gitDir, "cat-file", "--batch-check=%(objectname) %(objecttype)"], {
    input: `${objects.join("\n")}\n`,
  });
  const held = new Set<string>();
  for (const line of answer.split("\n")) {
    const [name, type] = line.split(" ");
    if (type === "commit" && name) held.add(name);
  }
  return held;
}

/**
 * How every checkout fetch starts, the mirror's from the host and a worktree's from the mirror:
 * protocol v2, no tags, no FETCH_HEAD, and no gc of its own (the mirror's maintenance is svc's)
 */
export const FETCH = [
  "-c",
  "protocol.version=2",
  "fetch",
  "--quiet",
  "--no-tags",
  "--no-write-fetch-head",
  "--no-auto-gc",
] as const;

/** A full hex commit id: what the event's sender wrote is only handed to git when it is one. */
export const COMMIT_ID = /^[0-9a-f]{40}([0-9a-f]{24})?$/;
