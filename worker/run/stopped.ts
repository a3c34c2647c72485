import type { NewArtifact } from "../../db/artifacts.ts";
import { finishTask } from "../../db/tasks.ts";
import { CANCELLED, type RunEnd, type RunState } from "./types.ts";

/**
 * A task stopped by its signal: a cancellation through the API, or the worker shutting down
 * (released for retry). `revoke`: the token its agent held, revoked by the same statement.
 */
export async function stopped(
  run: RunState,
  taskId: string,
  artifact?: NewArtifact,
  revoke?: string,
): Promise<RunEnd> {
  const { records } = run.deps;
  if (run.input.isCancelled()) {
    await finishTask(records, taskId, { status: "skipped", diagnostic: CANCELLED }, { artifact, revoke });
    return { kind: "cancelled" };
  }
  await finishTask(records, taskId, { status: "skipped" }, { artifact, revoke });
  return { kind: "released" };
}
