import { join } from "node:path";

/**
 * Where a run's directories live under the configuration directory. Dispatch records the root on
 * the workload, the run makes and fills the directories, the sandbox mounts them and the retention
 * sweep removes them: one layout, read by all four.
 */
export interface Workspace {
  /** `<config dir>/workspaces/<run>` */
  root: string;
  /** the worktree: a clone of the repository, or an empty directory when the trigger names none */
  checkout: string;
  /** per invocation: scratch space of the setup steps and the agent */
  runDir: string;
  /** per invocation: every file left here becomes an artifact */
  surfaceDir: string;
  /**
   * per invocation: the agent's own files (the run token's mcp.json, its private HOME, the CLI's
   * result file), made empty once the setup steps ended; no setup step ever sees it
   */
  agentDir: string;
  /** per invocation: step outputs and the agent transcript, outside the agent's reach */
  logsDir: string;
}

export function workspacePaths(configDir: string, workloadId: string, invocationId: string): Workspace {
  const root = join(configDir, "workspaces", workloadId);
  const invocationRoot = join(root, invocationId);
  return {
    root,
    checkout: join(root, "checkout"),
    runDir: join(invocationRoot, "run"),
    surfaceDir: join(invocationRoot, "surface"),
    agentDir: join(invocationRoot, "agent"),
    logsDir: join(invocationRoot, "logs"),
  };
}

/** A task's own directories beside its run's: `workspaces/<workload>/<task>/{checkout,run,surface,agent,logs}`. */
export function taskWorkspace(configDir: string, workloadId: string, taskId: string): Workspace {
  const root = join(configDir, "workspaces", workloadId, taskId);
  return {
    root,
    checkout: join(root, "checkout"),
    runDir: join(root, "run"),
    surfaceDir: join(root, "surface"),
    agentDir: join(root, "agent"),
    logsDir: join(root, "logs"),
  };
}
