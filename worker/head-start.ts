import { join } from "node:path";
import type { ConfigSnapshot, Pipeline } from "../shared/config/types.ts";
import type { ResolvedEvent } from "./dispatch.ts";
import { eventEnvironment, setupStepArgv } from "./setup-steps.ts";
import type { PreparedProcess, SpawnSpec } from "./spawner.ts";
import { makeNewRunDirectoriesNow, removeRunDirectories, workspacePaths } from "./workspace.ts";

/**
 * A run's head start, taken while the dispatch transaction that creates it claimed is still open:
 * its first setup step is started, held at its gate (see Spawner.prepare), so the spawner forks
 * while the database works, and its directories are made once the statement that writes the run's
 * rows has been sent (`makeDirectories`).
 * After the commit the run releases the step, so what remains between the commit and the step
 * running is an exec, not a mkdir, a fork and an exec. If the transaction rolls back, `abandon`
 * drops the held step, which never ran anything, and the directories of a run that never existed.
 *
 * Taken only when the run needs no clone: a clone takes far longer than what is saved here, and it
 * must not start for a run that may not exist.
 */
export interface HeadStart {
  /** the environment of every setup step of the run (and the base of its agent's) */
  env: Record<string, string>;
  /** makes the run's directories, at once; false if they could not be made */
  makeDirectories(): boolean;
  /** the run's directories were made; if not, the run makes them itself */
  readonly ready: boolean;
  firstStep: PreparedProcess;
  /** the dispatch rolled back: the held step is dropped and the directories removed */
  abandon(): void;
}

export interface HeadStartInput {
  config: Readonly<ConfigSnapshot>;
  spawner: { readonly alive: boolean; prepare(spec: SpawnSpec): PreparedProcess | undefined };
  workloadId: string;
  invocationId: string;
  pipeline: Pipeline;
  event: ResolvedEvent;
  /** the run's directories exist already (made while the claim's statement ran) */
  directoriesMade?: boolean;
}

export function takeHeadStart(input: HeadStartInput): HeadStart | undefined {
  const { config, pipeline, event } = input;
  const first = pipeline.setup[0];
  if (!first || !input.spawner.alive) return undefined;
  const { repo } = event.context;
  if (repo && config.repos[repo]?.cloneUrl) return undefined;
  const paths = workspacePaths(config.dir, input.workloadId, input.invocationId);
  const env = eventEnvironment(paths, event, pipeline);
  const firstStep = input.spawner.prepare({
    argv: setupStepArgv(first.run),
    cwd: paths.checkout,
    env,
    logFile: join(paths.logsDir, "setup-0.log"),
    truncate: true,
  });
  if (!firstStep) return undefined;
  let ready = input.directoriesMade === true;
  return {
    env,
    get ready() {
      return ready;
    },
    makeDirectories() {
      ready = makeNewRunDirectoriesNow(paths);
      return ready;
    },
    firstStep,
    abandon() {
      firstStep.discard();
      if (ready) removeRunDirectories(paths);
    },
  };
}
