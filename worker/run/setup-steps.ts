import { join } from "node:path";
import { finishTask, startTask } from "../../db/tasks.ts";
import { diagnostic } from "../../shared/diagnostics.ts";
import { newId } from "../../shared/ids.ts";
import { fileArtifact } from "./artifacts.ts";
import { setupStepArgv } from "./environment.ts";
import { stopped } from "./stopped.ts";
import type { RunEnd, RunState } from "./types.ts";

function stepLabel(run: string): string {
  const line = run.split("\n")[0]!.trim();
  return line.length > 80 ? `${line.slice(0, 77)}...` : line;
}

/**
 * Each setup step as `sh -c <run>` in the worktree, on the run's setup engine, with the run's environment;
 * the first failure ends the run. `onStarted` is called when a step's process exists.
 */
export async function runSetupSteps(run: RunState, onStarted: () => void): Promise<RunEnd | undefined> {
  const { deps, input } = run;
  const env = { ...run.env, ...run.setupEnv };
  const engine = run.engines.setup;
  const { records } = deps;
  const { invocationId, paths, signal } = input;
  for (const [index, step] of input.pipeline.setup.entries()) {
    const taskId = newId("task");
    const logFile = join(paths.logsDir, `setup-${index}.log`);
    const name = `setup[${index}]: ${stepLabel(step.run)}`;
    const row = { id: taskId, invocationId, kind: "setup", name, seq: run.seq++ } as const;
    // the task row is written once the step's process exists: the step waits neither for the
    // database nor for the CPU the write costs (a step that could not start gets its row after)
    let started: Promise<void> | undefined;
    const writeRow = () => {
      if (!started) {
        started = startTask(records, row);
        started.catch(() => {}); // awaited below; this only keeps an early rejection from being unhandled
      }
      return started;
    };
    const outcome = await engine.run({
      ...{ cwd: paths.checkout, env, logFile, signal },
      argv: setupStepArgv(step.run),
      truncate: true,
      onStarted: () => {
        writeRow();
        onStarted();
      },
    });
    await writeRow();
    const log = await fileArtifact({
      ...{ invocationId, taskId, path: logFile },
      name: `setup-${index}.log`,
      mediaType: "text/plain",
    });
    if (outcome.aborted) return stopped(run, taskId, log);
    if (outcome.exitCode !== 0) {
      const failure = diagnostic(
        "setup_failed",
        `setup step ${index} (${stepLabel(step.run)}) exited with ${outcome.exitCode ?? outcome.signal ?? outcome.spawnError}`,
        { field: `setup[${index}]`, metadata: { step: index, run: step.run, exitCode: outcome.exitCode } },
      );
      const end = { status: "failed", exitCode: outcome.exitCode, diagnostic: failure } as const;
      await finishTask(records, taskId, end, { artifact: log });
      return { kind: "failed", diagnostic: failure };
    }
    await finishTask(records, taskId, { status: "completed", exitCode: 0 }, { artifact: log });
  }
  return undefined;
}
