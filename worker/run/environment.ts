import type { Pipeline } from "../../shared/config/types.ts";
import type { Workspace } from "../../shared/workspace-layout.ts";
import type { ResolvedEvent } from "../event/resolve.ts";

export interface RunEnvironmentInput {
  workspace: Workspace;
  repo: string;
  sha: string;
  branch: string;
  eventName: string;
  /** the trigger kind */
  eventSource: string;
  payload: unknown;
  pipeline: Pick<Pipeline, "env">;
  /** the head the concurrency group's last completed run reviewed, if an ancestor of SHA (previous-head.ts) */
  previousSha?: string;
  /** a pull request's base commit and branch (BASE_SHA, BASE_REF), when the checkout holds them */
  base?: { sha: string; ref: string };
  /** the rest of a comment command's line (`@svc review <args>`), when a command fired the run */
  commandArgs?: string;
}

/**
 * The complete environment of a setup step, built from nothing: the contract's nine variables,
 * PREVIOUS_SHA (empty unless a concurrency group's earlier run reviewed an ancestor of SHA),
 * BASE_SHA and BASE_REF (a pull request's base, empty otherwise; svc's extension beside PREVIOUS_SHA),
 * the pipeline's `env` manifest, and PATH/HOME. Never a spread of process.env, so no `SVC_*`,
 * database URL or credential of the worker can reach a step. The payload travels as a variable,
 * never spliced into the command, so its shell metacharacters are inert.
 */
export function runEnvironment(input: RunEnvironmentInput): Record<string, string> {
  return {
    ...input.pipeline.env,
    PATH: process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin",
    HOME: process.env.HOME ?? "/",
    WORKTREE: input.workspace.checkout,
    RUN_DIR: input.workspace.runDir,
    SURFACE_DIR: input.workspace.surfaceDir,
    REPO: input.repo,
    SHA: input.sha,
    BRANCH: input.branch,
    EVENT_NAME: input.eventName,
    EVENT_SOURCE: input.eventSource,
    PAYLOAD_JSON: JSON.stringify(input.payload ?? null),
    PREVIOUS_SHA: input.previousSha ?? "",
    BASE_SHA: input.base?.sha ?? "",
    BASE_REF: input.base?.ref ?? "",
    ...(input.commandArgs !== undefined ? { COMMAND_ARGS: input.commandArgs } : {}),
  };
}

/** The run environment of an event: what dispatch resolved, in the run's workspace. */
export function eventEnvironment(
  workspace: Workspace,
  event: ResolvedEvent,
  pipeline: Pick<Pipeline, "env">,
  previousSha = "",
  base?: { sha: string; ref: string },
): Record<string, string> {
  const { repo, sha, branch } = event.context;
  return runEnvironment({
    workspace,
    repo,
    sha,
    branch,
    eventName: event.eventName,
    eventSource: event.kind,
    payload: event.payload,
    pipeline,
    previousSha,
    ...(base ? { base } : {}),
    ...(event.command ? { commandArgs: event.command.args } : {}),
  });
}

export function setupStepArgv(run: string): string[] {
  return ["/bin/sh", "-c", run];
}
