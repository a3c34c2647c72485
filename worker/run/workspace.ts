import { execFile } from "node:child_process";
import { mkdirSync, readdirSync, rmdirSync } from "node:fs";
import { rename, rm, stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import type { ConfigSnapshot } from "../../shared/config/types.ts";
import { type Diagnostic, diagnostic } from "../../shared/diagnostics.ts";
import type { Workspace } from "../../shared/workspace-layout.ts";
import type { EventContext } from "../event/context.ts";

const execFileAsync = promisify(execFile);

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false; // stat failed: treat the path as absent
  }
}

// git must never prompt, read the operator's global config, or learn svc's environment
function gitEnv(): Record<string, string> {
  return {
    PATH: process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin",
    HOME: process.env.HOME ?? "/",
    GIT_TERMINAL_PROMPT: "0",
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
  };
}

async function git(args: string[], cwd?: string): Promise<string> {
  const { stdout } = await execFileAsync("git", args, { cwd, env: gitEnv(), maxBuffer: 16 * 1024 * 1024 });
  return stdout;
}

export class CheckoutError extends Error {}

/**
 * Whether `commit` is an ancestor of (or is) the checkout's HEAD. False when it is not, when the
 * clone does not hold it (a force push left it unreachable) and when there is no clone. `commit`
 * must be a full or abbreviated hex object name: anything else is never handed to git, which would
 * read a leading `-` as an option.
 */
export async function isAncestorOfHead(checkout: string, commit: string): Promise<boolean> {
  if (!/^[0-9a-f]{7,64}$/.test(commit)) return false;
  if (!(await exists(join(checkout, ".git")))) return false;
  try {
    // a retried run reuses its checkout, which an earlier attempt's steps could write into: no hook
    // or fsmonitor the repository's config might name runs for this question
    const inert = ["-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null"];
    await git([...inert, "merge-base", "--is-ancestor", "--end-of-options", commit, "HEAD"], checkout);
    return true;
  } catch {
    return false; // exit 1: not an ancestor; 128: the clone does not hold it. Either way: review everything
  }
}

/**
 * The run, surface, agent and logs directories (and an empty checkout when nothing is cloned), each
 * 0700: the worker's alone until a sandbox hands them to its container's user (never to everyone).
 */
function makeRunDirectories(paths: Workspace, emptyCheckout: boolean): void {
  // synchronously, the shared parent first: five mkdir calls cost 0.1-0.2 ms here (measured before
  // the agent's folder made them six), where the same through the thread pool, side by side, cost
  // 0.3-1.5 ms before the first setup step could start
  mkdirSync(dirname(paths.runDir), { recursive: true, mode: 0o700 });
  const dirs = [
    paths.runDir,
    paths.surfaceDir,
    paths.agentDir,
    paths.logsDir,
    ...(emptyCheckout ? [paths.checkout] : []),
  ];
  for (const dir of dirs) mkdirSync(dir, { recursive: true, mode: 0o700 });
}

/**
 * The agent's folder, emptied once the setup steps ended: what the agent gets there (its token
 * file, its HOME, its CLI's result file) nothing of the setup steps wrote (no setup container
 * mounts it) or left behind. The folder itself is kept: a sandbox's agent container, started
 * beside the setup steps, mounts this very directory. Removing what is in it follows no link.
 */
export async function emptyAgentDir(paths: Workspace): Promise<void> {
  let names: string[];
  try {
    // the usual case, an empty folder made with the run's others: one system call, synchronously
    names = readdirSync(paths.agentDir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    mkdirSync(paths.agentDir, { mode: 0o700 });
    return;
  }
  for (const name of names) await rm(join(paths.agentDir, name), { recursive: true, force: true });
}

/**
 * Creates the workspace of one invocation. A repository is cloned into a temporary directory and
 * renamed into place, so a crash mid-clone never leaves a half checkout that a retry would trust.
 */
export async function prepareWorkspace(
  paths: Workspace,
  checkout: { cloneUrl?: string; sha: string; branch: string },
): Promise<void> {
  makeRunDirectories(paths, !checkout.cloneUrl);
  if (!checkout.cloneUrl) return;
  if (await exists(join(paths.checkout, ".git"))) return;
  const temporary = `${paths.checkout}.partial-${process.pid}-${Date.now()}`;
  try {
    // made first, so the checkout is 0700 like the other run folders (git clones into an empty directory)
    mkdirSync(temporary, { mode: 0o700 });
    const branchArgs = checkout.branch && !checkout.sha ? ["--branch", checkout.branch] : [];
    await git(["clone", "--quiet", "--no-hardlinks", ...branchArgs, "--", checkout.cloneUrl, temporary]);
    if (checkout.sha) {
      // the event's sha is the sender's: resolved to a commit id first, never read as an option
      // (`git checkout` of this git takes no --end-of-options before a revision)
      const commit = await git(
        ["rev-parse", "--verify", "--end-of-options", `${checkout.sha}^{commit}`],
        temporary,
      ).catch(() => {
        throw new CheckoutError(`${JSON.stringify(checkout.sha)} names no commit of the repository`);
      });
      await git(
        ["-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", commit.trim()],
        temporary,
      );
    }
    await rm(paths.checkout, { recursive: true, force: true });
    await rename(temporary, paths.checkout);
  } catch (error) {
    await rm(temporary, { recursive: true, force: true });
    const message = (error as { stderr?: string }).stderr?.trim() || (error as Error).message;
    throw new CheckoutError(message);
  }
}

/**
 * Makes the directories of a run (or of an orchestrated task: `what` says so) and clones its event's
 * repository at the event's revision. A failed clone is returned as the `setup_failed` diagnostic
 * that ends it; nothing else is caught.
 */
export async function checkOutEvent(
  config: Readonly<Pick<ConfigSnapshot, "repos">>,
  paths: Workspace,
  context: EventContext,
  what = "",
): Promise<Diagnostic | undefined> {
  const { repo, sha, branch } = context;
  try {
    await prepareWorkspace(paths, { cloneUrl: repo ? config.repos[repo]?.cloneUrl : undefined, sha, branch });
    return undefined;
  } catch (error) {
    if (!(error instanceof CheckoutError)) throw error;
    const message = `cloning ${repo} at ${sha || branch || "its default branch"}${what} failed: ${error.message}`;
    return diagnostic("setup_failed", message, { field: "checkout" });
  }
}

/**
 * The checkout of a run without a repository is an empty directory: one rmdir, synchronously,
 * removes it. A clone (or anything a step left) goes through the recursive, asynchronous removal.
 */
export async function removeCheckout(paths: Workspace): Promise<void> {
  try {
    rmdirSync(paths.checkout);
    return;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
    // ENOTEMPTY (or anything else): the recursive removal below handles it, or reports why not
  }
  await rm(paths.checkout, { recursive: true, force: true });
}
