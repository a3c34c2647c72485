import { join } from "node:path";
import type pg from "pg";
import type { NewArtifact } from "../../db/artifacts.ts";
import { type InvocationKnowledge, recordInvocationKnowledge } from "../../db/invocation-knowledge.ts";
import type { TriggerEvent } from "../../db/invocations.ts";
import { finishTask, startTask } from "../../db/tasks.ts";
import { getTrigger } from "../../db/triggers.ts";
import type { Pipeline } from "../../shared/config/types.ts";
import { type Diagnostic, diagnostic } from "../../shared/diagnostics.ts";
import { newId } from "../../shared/ids.ts";
import { runProcessTree } from "../exec/process.ts";
import { withRunSandbox } from "../exec/sandbox/run.ts";
import { ClaimLostError } from "../outputs/delivery.ts";
import { publishOutputs } from "../outputs/publish.ts";
import { type ResolvedEvent, resolveEvent } from "../queue/dispatch.ts";
import { runAgentOnTargets } from "./agent.ts";
import { fileArtifact, recordSurface } from "./artifacts.ts";
import { eventEnvironment, setupStepArgv } from "./environment.ts";
import { prepareRunKnowledge, type RunKnowledge } from "./knowledge.ts";
import type { ExecuteDeps } from "./lifecycle.ts";
import { runGate } from "./output-gate.ts";
import { CheckoutError, prepareWorkspace, type Workspace } from "./workspace.ts";

/** How a run ended, as runClaimedInvocation records it. */
export type RunEnd =
  | { kind: "completed"; result: unknown }
  | { kind: "failed"; diagnostic: Diagnostic }
  /** handed back to the queue: shutdown, or (`credentials`) no target usable right now */
  | { kind: "released"; credentials?: boolean }
  /** cancelled through the API while it ran: the row already says `cancelled` */
  | { kind: "cancelled" }
  /** the claim was lost (another attempt holds the run): nothing is recorded */
  | { kind: "lost" };

export const CANCELLED = diagnostic(
  "cancelled",
  "the invocation was cancelled while it ran; its process tree was killed",
);

export interface RunInput {
  invocationId: string;
  workload: { id: string; trigger_id: string | null; pipeline: string };
  pipeline: Pipeline;
  paths: Workspace;
  signal: AbortSignal;
  /** already resolved by dispatch */
  event?: ResolvedEvent;
  /** the trigger's event fields, read by the lane claim (null: the workload has no trigger) */
  trigger?: TriggerEvent | null;
  /** the target the invocation row names already */
  target: string | null;
  isCancelled: () => boolean;
  /**
   * a heartbeat now; false when the claim is lost (the run's lease failed, or another worker took
   * it): then the run stops and publishes nothing. When absent, the claim is taken as held.
   */
  stillHeld?: () => Promise<boolean>;
}

/** One run in progress: what every phase reads, and the next task's sequence number. */
export interface RunState {
  deps: ExecuteDeps;
  input: RunInput;
  event: ResolvedEvent;
  /** the environment of every setup step, and the base of the agent's */
  env: Record<string, string>;
  /** where the run's own records go (see ExecuteDeps.records) */
  records: pg.Pool;
  /** what the pipeline's `knowledge` block delivers into this run (prompt section, files) */
  knowledge: RunKnowledge;
  /** what retrieval delivered, until it is recorded on the invocation (see runPhases) */
  knowledgeUnrecorded?: InvocationKnowledge;
  seq: number;
}

/** One run: its phases, in its sandbox when the pipeline declares one (worker/exec/sandbox/run.ts). */
export function runInvocation(deps: ExecuteDeps, input: RunInput): Promise<RunEnd> {
  return withRunSandbox(deps, input, runPhases);
}

/**
 * The phases of one run, in order: resolve the event → prepare the workspace → setup steps (with the
 * knowledge retrieval beside them) → agent on the pipeline's targets → result check. Each phase returns how the run ended if it ended there.
 */
async function runPhases(deps: ExecuteDeps, input: RunInput): Promise<RunEnd> {
  const event = await resolveRunEvent(deps, input);
  // an open circuit breaker holds the run; the pipeline's own events are not answered (docs/outputs.md)
  const gate = await runGate(deps, input.pipeline, input.invocationId, event);
  if (gate === "wait") return { kind: "released", credentials: true };
  if (gate === "own_event") return { kind: "completed", result: null };
  const unprepared = await prepareRunWorkspace(deps, input, event);
  if (unprepared) return unprepared;
  // retrieval (with a query rewrite, a model call) runs beside the setup steps, not before them,
  // from the moment the first step's process exists; only the agent needs what it delivers
  let knowledge: Promise<RunKnowledge> | undefined;
  const retrieve = () => {
    if (!knowledge) {
      knowledge = prepareRunKnowledge(deps, {
        invocationId: input.invocationId,
        pipeline: input.pipeline,
        event,
        runDir: input.paths.runDir,
      });
      // settled below in every case; this only keeps a rejection during the setup steps from being unhandled
      knowledge.catch(() => {});
    }
    return knowledge;
  };
  const run: RunState = {
    deps,
    input,
    event,
    env: eventEnvironment(input.paths, event, input.pipeline),
    records: deps.records ?? deps.pool,
    knowledge: { passages: [] },
    seq: 0,
  };
  const setupEnd = await runSetupSteps(run, retrieve).finally(() => retrieve().catch(() => {}));
  // what retrieval delivered is recorded on the invocation however the run ends: by the agent's
  // first task start (run-agent.ts, the same statement), or here
  let end: RunEnd;
  try {
    if (setupEnd) {
      run.knowledgeUnrecorded = (await retrieve().catch(() => undefined))?.record;
      end = setupEnd;
    } else {
      run.knowledge = await retrieve();
      run.knowledgeUnrecorded = run.knowledge.record;
      end = await runAgentPhases(run);
    }
  } catch (error) {
    // the run's own error is what its end reports: a record that could not be written with it is lost
    await recordKnowledgeLeft(run).catch(() => {});
    throw error;
  }
  await recordKnowledgeLeft(run);
  return end;
}

async function recordKnowledgeLeft(run: RunState): Promise<void> {
  const record = run.knowledgeUnrecorded;
  if (!record) return;
  run.knowledgeUnrecorded = undefined;
  await recordInvocationKnowledge(run.records, run.input.invocationId, record);
}

/** The agent on the pipeline's targets, the result check, then the outputs. */
async function runAgentPhases(run: RunState): Promise<RunEnd> {
  const { deps, input, event } = run;
  let result: unknown = null;
  if (input.pipeline.targets.length > 0) {
    // the agent's result is checked and recorded with its task's end (run-agent.ts)
    const agent = await runAgentOnTargets(run);
    if (agent.kind === "ended") return agent.end;
    if (agent.invalid) {
      await recordSurface(run.records, input.invocationId, input.paths.surfaceDir);
      return { kind: "failed", diagnostic: { ...agent.invalid, target: agent.target } };
    }
    result = agent.result;
    // a checked result is published before the run is recorded as completed, exactly once per key
    let unpublished: Awaited<ReturnType<typeof publishOutputs>>;
    try {
      unpublished = await publishOutputs(deps, {
        invocationId: input.invocationId,
        triggerId: input.workload.trigger_id,
        pipeline: input.pipeline,
        result,
        event,
        ...(input.stillHeld ? { stillHeld: input.stillHeld } : {}),
      });
    } catch (error) {
      if (error instanceof ClaimLostError) return { kind: "lost" };
      throw error;
    }
    if (unpublished) {
      await recordSurface(run.records, input.invocationId, input.paths.surfaceDir);
      return { kind: "failed", diagnostic: { ...unpublished, target: agent.target } };
    }
  }
  await recordSurface(run.records, input.invocationId, input.paths.surfaceDir);
  return { kind: "completed", result };
}

/**
 * The event as dispatch resolved it, or resolved from the trigger the lane claim read, or (neither
 * given: an orchestrated task) read here.
 */
export async function resolveRunEvent(
  deps: ExecuteDeps,
  input: Pick<RunInput, "event" | "trigger" | "workload" | "pipeline">,
): Promise<ResolvedEvent> {
  if (input.event) return input.event;
  const records = deps.records ?? deps.pool;
  const trigger =
    input.trigger !== undefined
      ? input.trigger
      : input.workload.trigger_id
        ? await getTrigger(records, input.workload.trigger_id)
        : undefined;
  if (trigger) return resolveEvent(records, trigger);
  return {
    kind: "manual",
    source: input.pipeline.name,
    eventName: input.pipeline.name,
    payload: {},
    context: { repo: "", sha: "", branch: "" },
  };
}

/** Makes the run's directories and clones its repository; a failed clone ends the run. */
async function prepareRunWorkspace(
  deps: ExecuteDeps,
  input: RunInput,
  event: ResolvedEvent,
): Promise<RunEnd | undefined> {
  const { repo, sha, branch } = event.context;
  try {
    await prepareWorkspace(input.paths, {
      cloneUrl: repo ? deps.config.repos[repo]?.cloneUrl : undefined,
      sha,
      branch,
    });
    return undefined;
  } catch (error) {
    if (!(error instanceof CheckoutError)) throw error;
    const message = `cloning ${repo} at ${sha || branch || "its default branch"} failed: ${error.message}`;
    return { kind: "failed", diagnostic: diagnostic("setup_failed", message, { field: "checkout" }) };
  }
}

function stepLabel(run: string): string {
  const line = run.split("\n")[0]!.trim();
  return line.length > 80 ? `${line.slice(0, 77)}...` : line;
}

/**
 * Each setup step as `sh -c <run>` in the worktree, with the run's environment; the first failure
 * ends the run. `onStarted` is called when a step's process exists.
 */
async function runSetupSteps(run: RunState, onStarted: () => void): Promise<RunEnd | undefined> {
  const { deps, input, env, records } = run;
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
    const running = runProcessTree({
      ...{ cwd: paths.checkout, env, logFile, signal },
      argv: setupStepArgv(step.run),
      truncate: true,
      spawner: deps.spawner,
      onStarted: () => {
        writeRow();
        onStarted();
      },
    });
    const outcome = await running;
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
      await recordSurface(records, invocationId, paths.surfaceDir);
      return { kind: "failed", diagnostic: failure };
    }
    await finishTask(records, taskId, { status: "completed", exitCode: 0 }, { artifact: log });
  }
  return undefined;
}

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
  if (run.input.isCancelled()) {
    await finishTask(run.records, taskId, { status: "skipped", diagnostic: CANCELLED }, { artifact, revoke });
    return { kind: "cancelled" };
  }
  await finishTask(run.records, taskId, { status: "skipped" }, { artifact, revoke });
  return { kind: "released" };
}
