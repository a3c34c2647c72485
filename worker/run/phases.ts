import { previousGroupHead } from "../../db/concurrency-groups.ts";
import { recordInvocationKnowledge } from "../../db/invocation-knowledge.ts";
import { withCommand } from "../event/command.ts";
import { eventOfRun } from "../event/resolve.ts";
import type { RunEngines } from "../exec/engine.ts";
import { openSandbox } from "../exec/sandbox/engine.ts";
import { ClaimLostError } from "../outputs/delivery.ts";
import { holdOutputs } from "../outputs/held.ts";
import { announceProgress, noteTooLarge } from "../outputs/progress.ts";
import { publishOutputs } from "../outputs/publish.ts";
import { markedIncomplete, withoutIgnored } from "../outputs/review.ts";
import { runAgentOnTargets } from "./agent.ts";
import { recordSurface } from "./artifacts.ts";
import { checkOutRun } from "./checkout-task.ts";
import { eventEnvironment } from "./environment.ts";
import { placeKnowledgeFiles, prepareRunKnowledge, type RunKnowledge, readableBy } from "./knowledge.ts";
import { runGate } from "./output-gate.ts";
import { ignoreRules, type RunReview, runReview, tooLarge } from "./review-rules.ts";
import { splitReview } from "./review-split.ts";
import { openRunSecrets, redactorFor } from "./run-secrets.ts";
import { runSetupSteps } from "./setup-steps.ts";
import { setupStepToken } from "./setup-token.ts";
import type { ReplyThread } from "./thread.ts";
import type { RunDeps, RunEnd, RunInput, RunState } from "./types.ts";
import { emptyAgentDir } from "./workspace.ts";

/**
 * One run's phases, in order: resolve the event → the output gate → prepare the workspace → setup
 * steps (with the knowledge retrieval beside them) → agent on the pipeline's targets (its result
 * checked with its end) → outputs. Each phase returns how the run ended if it ended there.
 */
export async function runInvocation(deps: RunDeps, input: RunInput): Promise<RunEnd> {
  const event = withCommand(await eventOfRun(deps.records, input), deps.config, input.pipeline);
  // an open circuit breaker or a spent period budget holds the run; the pipeline's own events are
  // not answered, nor replies in review threads svc did not open (docs/outputs.md)
  const gate = await runGate(deps, input, event);
  if (gate === "wait") return { kind: "released", credentials: true };
  if (gate === "own_event" || gate === "foreign_thread") return { kind: "completed", result: null };
  // due again at the period's reset, not polled (budget-periods.ts BudgetResume)
  if ("resume" in gate) return { kind: "released", resume: gate.resume };
  // sticky comments with `progress` say the run started; a failure there is logged, never the run's
  const { invocationId, workload, pipeline } = input;
  // a run whose outputs are held back writes nothing to the pull request, its progress included
  if (!input.outputsHeld)
    await announceProgress(deps, { invocationId, triggerId: workload.trigger_id, pipeline, event });
  // the group's last reviewed head is read first: the checkout holds it when it is an ancestor of this head
  const reviewed = input.group
    ? await previousGroupHead(deps.records, input.group, input.invocationId)
    : undefined;
  const checkout = await checkOutRun(deps, input, event, reviewed);
  if (checkout.failure) return { kind: "failed", diagnostic: checkout.failure };
  // a pull request above review.max_changed_lines is not reviewed unless asked with --force: no
  // setup step and no agent, and the sticky comment says why and how to ask. An orchestrated
  // pipeline's review is split by path groups instead, one task each (review-split.ts)
  const review = runReview(pipeline, checkout.result?.review);
  const large = review && tooLarge(pipeline, event, review.facts);
  const split = large && review ? await splitReview(deps, input, event, review, large) : undefined;
  if (large && !split) {
    if (!input.outputsHeld)
      await noteTooLarge(deps, { invocationId, triggerId: workload.trigger_id, pipeline, event }, large);
    return { kind: "completed", result: null };
  }
  // where each phase's processes run: on a sandboxed pipeline, a container for the setup steps and
  // another for the agent; else the worker's host for both
  // before a container exists: an App that cannot issue the steps' token ends the run here
  const setupToken = await setupStepToken(deps, input.pipeline, event.context.repo);
  if (setupToken.failure) return { kind: "failed", diagnostic: setupToken.failure };
  const { sandbox } = input.pipeline;
  const previousSha = checkout.result?.previous ?? "";
  const base = checkout.result?.base;
  const engines: RunEngines = sandbox
    ? openSandbox(deps, sandbox, { paths: input.paths, invocationId: input.invocationId })
    : { setup: deps.host, agent: deps.host };
  // open before the first process: every artifact of the run from here on is redacted with them
  const secrets = openRunSecrets(input.invocationId, deps);
  if (setupToken.token) secrets.add(setupToken.token);
  // the checkout's credential reached git alone; should a host echo it, it is redacted too
  if (checkout.result?.secret) secrets.add(checkout.result.secret);
  const run: RunState = {
    ...{ deps, input, event, engines, secrets, previousSha },
    env: eventEnvironment(input.paths, event, input.pipeline, previousSha, base),
    ...(setupToken.token ? { setupEnv: { GH_TOKEN: setupToken.token, GITHUB_TOKEN: setupToken.token } } : {}),
    knowledge: { passages: [] },
    seq: checkout.result ? 1 : 0,
    ...(split ? { split } : {}),
  };
  let end: RunEnd;
  try {
    try {
      end = await runProcesses(run, review, gate.thread);
      // a container that never started ends the run with its own diagnostic, whatever the phase made of it
      const failure = engines.setup.failure() ?? engines.agent.failure();
      if (failure && end.kind === "failed") end = { kind: "failed", diagnostic: failure };
    } finally {
      await Promise.all([engines.setup.close(), engines.agent.close()]);
    }
    // read once no process of the run is alive: nothing can swap a file for a link while it is read
    if (end.kind === "completed" || end.kind === "failed")
      await recordSurface(deps.records, deps.logger, input.invocationId, input.paths.surfaceDir);
  } finally {
    // after the surface: its artifacts are redacted with the run's values too
    secrets.close();
  }
  return end;
}

/** The phases that start processes: setup steps, then the agent and what follows it. */
async function runProcesses(
  run: RunState,
  review: RunReview | undefined,
  thread?: ReplyThread,
): Promise<RunEnd> {
  const { deps, input } = run;
  // retrieval (with a query rewrite, a model call) runs beside the setup steps, not before them,
  // from the moment the first step's process exists; only the agent needs what it delivers
  let knowledge: Promise<RunKnowledge> | undefined;
  const retrieve = () => {
    if (!knowledge) {
      knowledge = prepareRunKnowledge(deps, {
        invocationId: input.invocationId,
        pipeline: input.pipeline,
        event: run.event,
        runDir: input.paths.runDir,
      });
      // settled below in every case; this only keeps a rejection during the setup steps from being unhandled
      knowledge.catch(() => {});
    }
    return knowledge;
  };
  // an outsider's run is given the documents marked for outsiders only (knowledge.outsiders)
  await placeKnowledgeFiles(
    deps.knowledge,
    input.pipeline,
    input.paths.runDir,
    readableBy(deps.config, run.event),
  );
  const setupEnd = await runSetupSteps(run, retrieve).finally(() => retrieve().catch(() => {}));
  // what retrieval delivered is recorded on the invocation however the run ends: by the agent's
  // first task start (agent.ts, the same statement), or here
  let end: RunEnd;
  try {
    if (setupEnd) {
      run.knowledgeUnrecorded = (await retrieve().catch(() => undefined))?.record;
      end = setupEnd;
    } else {
      // the setup container's removal goes on beside what follows; the agent's first process starts
      // once every process in it is gone (exec/sandbox/sandbox.ts), and the run's end awaits it.
      // The agent's folder, which no setup container mounts, is emptied for the agent alone
      void run.engines.setup.close();
      await emptyAgentDir(input.paths);
      run.knowledge = await retrieve();
      run.knowledgeUnrecorded = run.knowledge.record;
      end = await runAgentPhases(run, review, thread);
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
  await recordInvocationKnowledge(run.deps.records, run.input.invocationId, record);
}

/** The agent on the pipeline's targets, the result check, then the outputs (the surface is recorded after, by runInvocation). */
async function runAgentPhases(
  run: RunState,
  review: RunReview | undefined,
  thread?: ReplyThread,
): Promise<RunEnd> {
  const { deps, input, event } = run;
  let result: unknown = null;
  if (input.pipeline.targets.length > 0) {
    // the agent's result is checked and recorded with its task's end (agent.ts)
    const agent = await runAgentOnTargets(run, review, thread);
    if (agent.kind === "ended") return agent.end;
    if (agent.invalid) return { kind: "failed", diagnostic: { ...agent.invalid, target: agent.target } };
    // findings on ignored paths are dropped and counted; a result so far is marked incomplete
    result = withoutIgnored(input.pipeline, agent.result, ignoreRules(review));
    if (agent.incomplete) result = markedIncomplete(input.pipeline, result, agent.incomplete.limit);
    // a checked result is published before the run is recorded as completed, exactly once per key
    let unpublished: Awaited<ReturnType<typeof publishOutputs>>;
    try {
      const publish = input.outputsHeld ? holdOutputs : publishOutputs;
      unpublished = await publish(deps, {
        invocationId: input.invocationId,
        triggerId: input.workload.trigger_id,
        pipeline: input.pipeline,
        result,
        event,
        ...(input.stillHeld ? { stillHeld: input.stillHeld } : {}),
        redact: (text) => redactorFor(input.invocationId).redact(text),
      });
    } catch (error) {
      if (error instanceof ClaimLostError) return { kind: "lost" };
      throw error;
    }
    if (unpublished) {
      return { kind: "failed", diagnostic: { ...unpublished, target: agent.target } };
    }
    // published, and still the run did not finish: it ends with the limit it reached
    if (agent.incomplete) return { kind: "failed", diagnostic: agent.incomplete.diagnostic };
  }
  return { kind: "completed", result };
}
