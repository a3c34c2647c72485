import { closeSync, readSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import { keptResult } from "../../db/kept-results.ts";
import type { Queryable } from "../../db/queryable.ts";
import type { Pipeline } from "../../shared/config/types.ts";
import type { Diagnostic } from "../../shared/diagnostics.ts";
import { openRegularFile } from "../../shared/no-follow.ts";
import { checkResult } from "../../shared/result-check.ts";
import type { Workspace } from "../../shared/workspace-layout.ts";
import { reviewsPulls } from "../checkout/review-rules.ts";

/**
 * A review stopped at its turn or time limit publishes what it found so far instead of nothing
 * (docs/worker.md, "Partial results"). The agent of a review pipeline is told to keep its result
 * so far with the svc tool `keep_result_so_far` (stored on its agent task, any runtime), or in
 * `$RUN_DIR/result.partial.json` (an agent that writes files); when the runtime ends it with
 * `agent_turn_limit` or `agent_timeout`, the kept result, else that file, if it is one JSON object
 * satisfying `result.schema`, is published with an "incomplete" line, and the run still fails with
 * the limit's diagnostic.
 */
export const PARTIAL_FILE = "result.partial.json";
/** more than a review's findings ever take; a bigger file is left unread */
const MAX_BYTES = 1024 * 1024;

/** The pipelines whose agent is told about the file: reviews with a result schema, not orchestrators. */
export function takesPartial(
  pipeline: Pick<Pipeline, "result" | "orchestrator" | "review" | "outputs">,
): boolean {
  return !!pipeline.result && !pipeline.orchestrator && reviewsPulls(pipeline);
}

/** The limit a diagnostic says the agent reached, or undefined for any other end. */
export function limitOf(failure: Diagnostic): "turn" | "time" | undefined {
  if (failure.code === "agent_turn_limit") return "turn";
  if (failure.code === "agent_timeout") return "time";
  return undefined;
}

/**
 * Removes what a setup step (the repository's code) may have left at the path, called after the
 * setup steps ended and before the agent starts: only the agent's own file is ever published.
 */
export function clearPartial(paths: Pick<Workspace, "runDir">): void {
  try {
    // unlink removes a link itself, never what it names
    unlinkSync(join(paths.runDir, PARTIAL_FILE));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
}

/**
 * The agent's result so far: a JSON object read from a regular file (never through a link, which
 * could name a file of the worker's), at most 1 MiB; undefined when there is none or it is not one.
 */
export function readPartial(paths: Pick<Workspace, "runDir">): Record<string, unknown> | undefined {
  const opened = openRegularFile(join(paths.runDir, PARTIAL_FILE));
  if ("skipped" in opened) return undefined;
  try {
    if (opened.stats.size > MAX_BYTES) return undefined;
    const buffer = Buffer.alloc(MAX_BYTES + 1);
    let size = 0;
    for (;;) {
      const n = readSync(opened.fd, buffer, size, buffer.length - size, null);
      if (n === 0 || size + n > MAX_BYTES) {
        size += n;
        break;
      }
      size += n;
    }
    if (size > MAX_BYTES) return undefined;
    const value: unknown = JSON.parse(buffer.subarray(0, size).toString("utf8"));
    return value !== null && typeof value === "object" && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    // not JSON (the agent was stopped mid-write, or wrote something else): nothing to publish
    return undefined;
  } finally {
    closeSync(opened.fd);
  }
}

/** Where a published result so far came from: the tool's kept result, or the agent's file. */
export type PartialSource = "keep_result_so_far" | typeof PARTIAL_FILE;

/**
 * The agent's result so far that satisfies `schema`: the one agent task `taskId` kept with the tool,
 * which wins when there is one (checked again: the configuration may have changed since), else the
 * file. Undefined when neither is a result to publish.
 */
export async function resultSoFar(
  db: Queryable,
  taskId: string,
  paths: Pick<Workspace, "runDir">,
  schema: Record<string, unknown>,
): Promise<{ result: Record<string, unknown>; from: PartialSource } | undefined> {
  const kept = await keptResult(db, taskId);
  if (kept && !checkResult(schema, kept)) return { result: kept, from: "keep_result_so_far" };
  const written = readPartial(paths);
  if (written && !checkResult(schema, written)) return { result: written, from: PARTIAL_FILE };
  return undefined;
}
