import { mkdirSync, readdirSync, rmdirSync } from "node:fs";
import { rm } from "node:fs/promises";
import { dirname, join } from "node:path";
import type pg from "pg";
import type { ConfigSnapshot, Pipeline } from "../../shared/config/types.ts";
import { type Diagnostic, diagnostic } from "../../shared/diagnostics.ts";
import type { Workspace } from "../../shared/workspace-layout.ts";
import { CheckoutError, type CheckoutResult, checkOutRepository } from "../checkout/checkout.ts";
import { type BaseInstructions, placeInstructions } from "../checkout/instructions.ts";
import type { EventContext } from "../event/context.ts";

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

/** An outsider's run's base instructions, by its folders: placed again once its setup steps ended. */
const baseInstructions = new WeakMap<Workspace, BaseInstructions>();

/**
 * For an outsider's pull request (worker/checkout/instructions.ts), makes the worktree's agent
 * instruction files the base commit's again, as the checkout left them: a setup step may have run
 * the pull request's code, which may have written its own. Undefined for any other run.
 */
export function restoreBaseInstructions(paths: Workspace): BaseInstructions | undefined {
  const instructions = baseInstructions.get(paths);
  if (instructions) placeInstructions(paths.checkout, instructions.files);
  return instructions;
}

export interface EventCheckout {
  /** the diagnostic that ends the run (or task) when the checkout could not be made */
  failure?: Diagnostic;
  /** what was checked out; absent when the event names no configured repository */
  result?: CheckoutResult;
}

/**
 * Makes the directories of a run (or of an orchestrated task: `what` says so) and checks out its
 * event's repository at the event's commit, when `repos` lists it (worker/checkout/). A checkout
 * that cannot be made is returned as the `setup_failed` diagnostic that ends it; nothing else is
 * caught.
 */
export async function checkOutEvent(
  deps: { pool: pg.Pool; config: Readonly<ConfigSnapshot> },
  paths: Workspace,
  context: EventContext,
  pipeline: Pipeline,
  options: { what?: string; previous?: string } = {},
): Promise<EventCheckout> {
  const { repo, sha, branch } = context;
  const cloneUrl = repo ? deps.config.repos[repo]?.cloneUrl : undefined;
  makeRunDirectories(paths, !cloneUrl);
  if (!cloneUrl) return {};
  try {
    const result = await checkOutRepository(deps, {
      ...{ repo, cloneUrl, context, pipeline, dest: paths.checkout },
      ...(options.previous ? { previous: options.previous } : {}),
    });
    if (result.instructions) {
      placeInstructions(paths.checkout, result.instructions.files);
      baseInstructions.set(paths, result.instructions);
    }
    return { result };
  } catch (error) {
    if (!(error instanceof CheckoutError)) throw error;
    const at = sha || branch || (context.pull ? `pull request #${context.number}` : "its default branch");
    const message = `checking out ${repo} at ${at}${options.what ?? ""} failed: ${error.message}`;
    return { failure: diagnostic("setup_failed", message, { field: "checkout" }) };
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
