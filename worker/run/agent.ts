import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { revokeToken } from "../../db/api_tokens.ts";
import type { NewArtifact } from "../../db/artifacts.ts";
import { setInvocationTarget } from "../../db/invocations.ts";
import { finishTask, type RecordedTask, startTask, type TaskEnd } from "../../db/tasks.ts";
import type { Target } from "../../shared/config/types.ts";
import { type Diagnostic, diagnostic } from "../../shared/diagnostics.ts";
import { newId } from "../../shared/ids.ts";
import { invocationTargets } from "../../shared/queues.ts";
import { runIdentity } from "../queue/dispatch.ts";
import { targetUsable } from "../queue/lanes.ts";
import { runAgentCli } from "../runtimes/agent-cli/run.ts";
import { runCommandAgent } from "../runtimes/command.ts";
import { runOpenAiAgent } from "../runtimes/openai.ts";
import type { AgentOutcome } from "../runtimes/outcome.ts";
import { artifactOf, fileArtifact, recordSurface } from "./artifacts.ts";
import { withDeadline } from "./deadline.ts";
import type { RunEnd, RunState } from "./phases.ts";
import { stopped } from "./phases.ts";
import { assemblePrompt, orchestrationSection, type Prompt, promptText } from "./prompt.ts";
import { checkResult } from "./result-check.ts";
import {
  newAgentToken,
  type RunAccess,
  type RunTokenRequest,
  runTokenLifetimeMs,
  withRunToken,
} from "./run-token.ts";

/** How the agent ended: a result (with what its check found, null when it passed), or the run's end. */
export type AgentEnd =
  | { kind: "result"; result: unknown; target: string; invalid: Diagnostic | null }
  | { kind: "ended"; end: RunEnd };

/** The prompt the agent gets: pipeline, agent, skill, the event and the knowledge delivered into the run. */
export function agentPrompt(run: RunState): Prompt {
  const { pipeline } = run.input;
  const { agent, skill } = runIdentity(pipeline, run.event.context);
  const prompt = assemblePrompt({
    config: run.deps.config,
    pipeline,
    agent,
    skill,
    event: { name: run.event.eventName, source: run.event.kind, payload: run.event.payload },
    knowledge: run.knowledge,
  });
  // an orchestrator learns its guidance, its budgets and how to hand work to tasks
  if (pipeline.orchestrator)
    return { ...prompt, user: `${prompt.user}\n\n${orchestrationSection(pipeline.orchestrator)}` };
  return prompt;
}

/**
 * The agent on the pipeline's targets, in order: the first usable target that answers gives the
 * result. A target whose credentials are cooling is skipped; when every target is unavailable the
 * run fails with `target_unavailable`, or waits (released) when none has a usable credential at all.
 */
export async function runAgentOnTargets(run: RunState): Promise<AgentEnd> {
  const { deps, input } = run;
  const prompt = agentPrompt(run);
  const transcript = join(input.paths.logsDir, "transcript.log");
  // synchronously, as every small file of a run: one system call here, where the thread pool
  // costs a thread's wake-up and the event loop's
  writeFileSync(transcript, "");
  const unavailable: Diagnostic[] = [];
  for (const name of invocationTargets(input.pipeline)) {
    const target = deps.config.targets[name];
    if (!target || !targetUsable(target, deps.cooldowns, deps.secrets)) continue;
    const attempt = await runAgentOn(run, target, prompt, transcript);
    if (attempt.kind === "result" || attempt.kind === "ended") return attempt;
    if (attempt.diagnostic) unavailable.push(attempt.diagnostic);
  }
  if (unavailable.length === 0) {
    // every target lacks a usable credential: nothing failed; the run waits on a stopped lane
    // until a probe or a restart brings a credential back
    return { kind: "ended", end: { kind: "released", credentials: true } };
  }
  const message = `no target of pipeline ${input.pipeline.name} could run the agent`;
  const failure = diagnostic("target_unavailable", message, { details: unavailable });
  return { kind: "ended", end: { kind: "failed", diagnostic: failure } };
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
): Promise<AgentEnd | { kind: "unavailable"; diagnostic?: Diagnostic }> {
  const { input, records } = run;
  const { invocationId } = input;
  const taskId = newId("task");
  const orchestrator = input.pipeline.orchestrator;
  const token = newAgentToken(
    tokenRequest(run, target, orchestrator ? { task: taskId, role: "orchestrator" } : undefined),
  );
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
  let revoked = false;
  const finish = async (end: TaskEnd, log: NewArtifact | undefined, followedBy?: RecordedTask) => {
    await finishTask(records, taskId, end, { artifact: log, revoke: token.stored.issued.id, followedBy });
    revoked = true;
  };
  try {
    if (target.name !== input.target) await setInvocationTarget(records, invocationId, target.name);
    const deadline = withDeadline(input.signal, orchestrator?.timeoutMs);
    const outcome = await startRuntime(
      { ...run, input: { ...input, signal: deadline.signal } },
      target,
      prompt,
      transcript,
      token.access,
    ).finally(deadline.clear);
    const log = await fileArtifact({
      ...{ invocationId, taskId, path: transcript },
      name: "transcript",
      mediaType: "text/plain",
    });
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
      const timeout = orchestratorTimeout(input.pipeline.name, target.name, orchestrator?.timeoutMs ?? 0);
      await finish({ status: "failed", diagnostic: timeout, ...usage }, log);
      return { kind: "ended", end: { kind: "failed", diagnostic: timeout } };
    }
    if (outcome.kind === "aborted") {
      const end = await stopped(run, taskId, log, token.stored.issued.id);
      revoked = true;
      return { kind: "ended", end };
    }
    if (outcome.kind === "failed") {
      await finish({ status: "failed", diagnostic: outcome.diagnostic, ...usage }, log);
      await recordSurface(records, invocationId, input.paths.surfaceDir);
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

function orchestratorTimeout(pipeline: string, target: string, ms: number): Diagnostic {
  return diagnostic(
    "agent_timeout",
    `the orchestrator of pipeline ${pipeline} did not finish within ${ms} ms (orchestrator.timeout); its unfinished tasks were cancelled`,
    { target, metadata: { timeoutMs: ms } },
  );
}

/**
 * The target's runtime: a command in the worktree, an agent CLI (claude-code, codex), or the openai
 * agent loop. Each gets the run token and the tool protocol's address (worker/run/run-token.ts): agent
 * processes only, never setup steps.
 */
export async function runRuntime(
  run: RunState,
  target: Target,
  prompt: Prompt,
  transcript: string,
  binding?: RunTokenRequest["binding"],
): Promise<AgentOutcome> {
  return withRunToken({ db: run.records, ...tokenRequest(run, target, binding) }, (token) =>
    startRuntime(run, target, prompt, transcript, token),
  );
}

/** What the run token of an agent on `target` in this run is bound to (worker/run/run-token.ts). */
function tokenRequest(
  run: RunState,
  target: Target,
  binding: RunTokenRequest["binding"] | undefined,
): Omit<RunTokenRequest, "db"> {
  const { deps, input } = run;
  const { agent } = runIdentity(input.pipeline, run.event.context);
  return {
    daemonUrl: deps.daemonUrl,
    invocationId: input.invocationId,
    pipeline: input.pipeline,
    agent,
    repo: run.event.context.repo,
    worktree: input.paths.checkout,
    runDir: input.paths.runDir,
    lifetimeMs: runTokenLifetimeMs(target),
    ...(binding ? { binding } : {}),
  };
}

function startRuntime(
  run: RunState,
  target: Target,
  prompt: Prompt,
  transcript: string,
  token: RunAccess,
): Promise<AgentOutcome> {
  const { deps, input } = run;
  const common = {
    cooldowns: deps.cooldowns,
    secrets: deps.secrets,
    transcriptFile: transcript,
    signal: input.signal,
  };
  switch (target.runtime) {
    case "command":
      return runCommandAgent({
        ...common,
        target,
        configDir: deps.config.dir,
        cwd: input.paths.checkout,
        env: { ...run.env, ...token.env },
        stdin: promptText(prompt),
        spawner: deps.spawner,
      });
    case "openai":
      return runOpenAiAgent({ ...common, target, prompt, tools: token });
    default:
      return runAgentCli({
        ...common,
        ...{ target, prompt, cwd: input.paths.checkout, runDir: input.paths.runDir },
        pipeline: input.pipeline,
        runEnv: run.env,
        access: token,
        spawner: deps.spawner,
      });
  }
}
