import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { revokeToken } from "../../db/api_tokens.ts";
import type { NewArtifact } from "../../db/artifacts.ts";
import { setInvocationTarget } from "../../db/invocations.ts";
import { adoptOrphanTasks } from "../../db/orchestrated-tasks.ts";
import { finishTask, type RecordedTask, startTask, type TaskEnd } from "../../db/tasks.ts";
import type { Target } from "../../shared/config/types.ts";
import type { Diagnostic } from "../../shared/diagnostics.ts";
import { newId } from "../../shared/ids.ts";
import { invocationTargets } from "../../shared/queues.ts";
import type { BaseInstructions } from "../checkout/instructions.ts";
import { runIdentity } from "../event/resolve.ts";
import { artifactOf, transcriptArtifact } from "./artifacts.ts";
import { withDeadline } from "./deadline.ts";
import { agentTimeout, onTargets, type Unavailable } from "./failover.ts";
import { clearPartial, limitOf, resultSoFar, takesPartial } from "./partial.ts";
import { assemblePrompt, orchestrationSection, type Prompt } from "./prompt.ts";
import { checkResult } from "./result-check.ts";
import { type RunReview, reviewPrompt } from "./review-rules.ts";
import { pathGroupsSection } from "./review-split.ts";
import { newAgentToken } from "./run-token.ts";
import { type AgentContext, startRuntime, tokenRequest } from "./runtime.ts";
import { stopped } from "./stopped.ts";
import type { ReplyThread } from "./thread.ts";
import type { RunEnd, RunState } from "./types.ts";
import { restoreBaseInstructions } from "./workspace.ts";

/**
 * How the agent ended: a result (with what its check found, null when it passed), or the run's end.
 * `incomplete`: the agent was stopped at a limit, and the result is what it wrote so far (partial.ts).
 */
export type AgentEnd =
  | {
      kind: "result";
      result: unknown;
      target: string;
      invalid: Diagnostic | null;
      incomplete?: { diagnostic: Diagnostic; limit: "turn" | "time" };
    }
  | { kind: "ended"; end: RunEnd };

/**
 * The prompt the agent gets: pipeline, agent, skill, the event and the knowledge delivered into the
 * run, for an outsider's pull request where its worktree's agent instructions come from, and for a
 * reply in svc's review thread the thread it answers.
 */
export function agentPrompt(
  run: RunState,
  instructions?: BaseInstructions,
  review?: RunReview,
  thread?: ReplyThread,
): Prompt {
  const { pipeline } = run.input;
  const { agent, skill } = runIdentity(pipeline, run.event.context);
  const rules = review ? reviewPrompt(review) : undefined;
  const prompt = assemblePrompt({
    config: run.deps.config,
    pipeline,
    agent,
    skill,
    event: {
      name: run.event.eventName,
      source: run.event.kind,
      payload: run.event.payload,
      ...(run.event.command ? { command: run.event.command } : {}),
    },
    knowledge: run.knowledge,
    ...(pipeline.concurrency ? { previousSha: run.previousSha } : {}),
    ...(instructions ? { baseInstructions: instructions } : {}),
    ...(rules ? { review: rules } : {}),
    ...(thread ? { thread } : {}),
    partialResult: takesPartial(pipeline),
  });
  // an orchestrator learns its guidance, its budgets and how to hand work to tasks, and of a large
  // review split by path groups, the tasks svc created for it
  if (pipeline.orchestrator) {
    const groups = run.split ? `\n\n${pathGroupsSection(run.split)}` : "";
    return { ...prompt, user: `${prompt.user}\n\n${orchestrationSection(pipeline.orchestrator)}${groups}` };
  }
  return prompt;
}

/**
 * The agent on the pipeline's targets, in order (failover.ts): the first usable target that answers
 * gives the result. When every target is unavailable the run fails with `target_unavailable`, or
 * waits (released) when none has a usable credential at all.
 */
export async function runAgentOnTargets(
  run: RunState,
  review?: RunReview,
  thread?: ReplyThread,
): Promise<AgentEnd> {
  const { input } = run;
  for (const problem of review?.facts.repo?.problems ?? [])
    run.deps.logger.warn("the base commit's review rules have a problem; its bad rules are left out", {
      event: "review.rules_invalid",
      invocation: input.invocationId,
      message: problem,
    });
  // the setup steps have ended and the agent has not started: nothing of the run writes meanwhile
  const prompt = agentPrompt(run, restoreBaseInstructions(input.paths), review, thread);
  if (takesPartial(input.pipeline)) clearPartial(input.paths);
  const transcript = join(input.paths.logsDir, "transcript.log");
  // synchronously, as every small file of a run: one system call here, where the thread pool
  // costs a thread's wake-up and the event loop's
  writeFileSync(transcript, "");
  const end = await onTargets(
    run.deps,
    invocationTargets(input.pipeline),
    (target) => runAgentOn(run, target, prompt, transcript),
    `pipeline ${input.pipeline.name} could run the agent`,
  );
  if (end.kind !== "exhausted") return end;
  // no target had a usable credential: nothing failed; the run waits on a stopped lane until a
  // probe or a restart brings a credential back
  if (!end.failure) return { kind: "ended", end: { kind: "released", credentials: true } };
  return { kind: "ended", end: { kind: "failed", diagnostic: end.failure } };
}

/** The invocation's agent as its runtime sees it, stopped by `signal`. */
function agentContext(run: RunState, signal: AbortSignal): AgentContext {
  const { input } = run;
  return {
    ...{ deps: run.deps, invocationId: input.invocationId, pipeline: input.pipeline, paths: input.paths },
    ...{ event: run.event, env: run.env, engine: run.engines.agent, signal, secrets: run.secrets },
  };
}

/**
 * One attempt of the agent on `target`, recorded as its task with the transcript as artifact. The
 * task's start stores the agent's run token and its end revokes it, in the same statements.
 */
async function runAgentOn(
  run: RunState,
  target: Target,
  prompt: Prompt,
  transcript: string,
): Promise<AgentEnd | Unavailable> {
  const { input } = run;
  const { records } = run.deps;
  const { invocationId } = input;
  const taskId = newId("task");
  const orchestrator = input.pipeline.orchestrator;
  const agent = agentContext(run, input.signal);
  // a review's agent may keep its result so far on this task (partial.ts)
  const binding = {
    task: taskId,
    ...(orchestrator ? { role: "orchestrator" as const } : {}),
    ...(takesPartial(input.pipeline) ? { keepsResult: true } : {}),
  };
  const token = newAgentToken(tokenRequest(agent, target, binding));
  const row = {
    id: taskId,
    invocationId,
    kind: "agent",
    name: `agent on ${target.name}`,
    seq: run.seq++,
  } as const;
  // the run's first agent task records what knowledge the run was given
  await startTask(records, row, { token: token.stored, knowledge: run.knowledgeUnrecorded });
  run.knowledgeUnrecorded = undefined;
  // the path group tasks svc created before the orchestrator existed are drawn under it
  if (run.split) await adoptOrphanTasks(records, invocationId, taskId);
  let revoked = false;
  const finish = async (end: TaskEnd, log: NewArtifact | undefined, followedBy?: RecordedTask) => {
    await finishTask(records, taskId, end, { artifact: log, revoke: token.stored.issued.id, followedBy });
    revoked = true;
  };
  try {
    if (target.name !== input.target) await setInvocationTarget(records, invocationId, target.name);
    const deadline = withDeadline(input.signal, orchestrator?.timeoutMs);
    const outcome = await startRuntime(
      { ...agent, signal: deadline.signal },
      target,
      prompt,
      transcript,
      token.access,
      taskId,
    ).finally(deadline.clear);
    const log = await transcriptArtifact(
      { ...{ invocationId, taskId, path: transcript }, name: "transcript", mediaType: "text/plain" },
      run.deps.logger,
    );
    // the model tokens it used go into the statement that ends the task, whichever way it ended
    const usage = outcome.usage ? { usage: outcome.usage } : {};
    if (outcome.kind === "result") {
      // a run that lost its claim (a partition outlived its lease) leaves its result and publishing
      // to the attempt that holds it now: a result is never recorded or published by two attempts
      if (input.stillHeld && !(await input.stillHeld())) {
        await finish({ status: "completed", exitCode: 0, ...usage }, log);
        return { kind: "ended", end: { kind: "lost" } };
      }
      // the result check is recorded by the statement that ends the agent's task
      const check = resultCheck(run, outcome.result);
      await finish({ status: "completed", exitCode: 0, ...usage }, log, check.record);
      return { kind: "result", result: outcome.result, target: target.name, invalid: check.invalid };
    }
    if (outcome.kind === "aborted" && deadline.expired()) {
      const ms = orchestrator?.timeoutMs ?? 0;
      const timeout = agentTimeout(
        `the orchestrator of pipeline ${input.pipeline.name} did not finish within ${ms} ms (orchestrator.timeout); its unfinished tasks were cancelled`,
        target.name,
        ms,
      );
      await finish({ status: "failed", diagnostic: timeout, ...usage }, log);
      return { kind: "ended", end: { kind: "failed", diagnostic: timeout } };
    }
    if (outcome.kind === "aborted") {
      const end = await stopped(run, taskId, log, token.stored.issued.id);
      revoked = true;
      return { kind: "ended", end };
    }
    if (outcome.kind === "failed") {
      const partial = await partialResult(run, taskId, outcome.diagnostic);
      if (partial) {
        await finish({ status: "failed", diagnostic: partial.incomplete.diagnostic, ...usage }, log);
        return { kind: "result", ...partial, target: target.name, invalid: null };
      }
      await finish({ status: "failed", diagnostic: outcome.diagnostic, ...usage }, log);
      return { kind: "ended", end: { kind: "failed", diagnostic: outcome.diagnostic } };
    }
    await finish({ status: "skipped", diagnostic: outcome.diagnostic ?? null, ...usage }, log);
    return { kind: "unavailable", ...(outcome.diagnostic ? { diagnostic: outcome.diagnostic } : {}) };
  } finally {
    // a throw before the task's end (the runtime, the transcript's read, the end's own write): the
    // token is revoked on its own. A failed revoke leaves a token that expires by itself
    if (!revoked) await revokeToken(records, token.stored.issued.id).catch(() => {});
  }
}

/**
 * What the agent kept so far, when the runtime stopped it at its turn or time limit and the kept
 * result or the file satisfies `result.schema` (partial.ts); its diagnostic then says the partial
 * result is published, and where it came from.
 */
async function partialResult(
  run: RunState,
  taskId: string,
  failure: Diagnostic,
): Promise<{ result: unknown; incomplete: { diagnostic: Diagnostic; limit: "turn" | "time" } } | undefined> {
  const { pipeline, paths } = run.input;
  const limit = limitOf(failure);
  if (!limit || !pipeline.result || !takesPartial(pipeline)) return undefined;
  const found = await resultSoFar(run.deps.records, taskId, paths, pipeline.result.schema);
  if (!found) return undefined;
  const message = `${failure.message}; its result so far (${found.from}) is published, marked incomplete`;
  return { result: found.result, incomplete: { diagnostic: { ...failure, message }, limit } };
}

/**
 * The `result.schema` task: the agent's result against the pipeline's schema (skipped without one),
 * with the result written to `result.json` as its artifact; recorded by the caller.
 */
function resultCheck(run: RunState, result: unknown): { record: RecordedTask; invalid: Diagnostic | null } {
  const { invocationId, paths, pipeline } = run.input;
  const resultFile = join(paths.logsDir, "result.json");
  const text = `${JSON.stringify(result, null, 2)}\n`;
  writeFileSync(resultFile, text);
  const checkId = newId("task");
  const artifact = artifactOf(
    { invocationId, taskId: checkId, path: resultFile, name: "result.json" },
    Buffer.from(text),
  );
  const invalid = pipeline.result ? checkResult(pipeline.result.schema, result) : null;
  const row = {
    id: checkId,
    invocationId,
    seq: run.seq++,
    kind: "result_check",
    name: "result.schema",
  } as const;
  const end: TaskEnd = invalid
    ? { status: "failed", diagnostic: invalid }
    : { status: pipeline.result ? "completed" : "skipped" };
  return { record: { row, end, artifact }, invalid };
}
