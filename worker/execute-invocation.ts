import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import type pg from "pg";
import type { PgBoss } from "pg-boss";
import { issueSandboxToken, revokeInvocationTokens } from "../db/api_tokens.ts";
import { transactionDb, wakeWorkers } from "../db/boss.ts";
import {
  finishInvocation,
  getInvocationStatus,
  heartbeatInvocation,
  type InvocationRow,
  releaseInvocation,
  setInvocationTarget,
} from "../db/invocations.ts";
import { closeOpenTasks, finishTask, startTask } from "../db/tasks.ts";
import { withTransaction } from "../db/transaction.ts";
import { getTrigger } from "../db/triggers.ts";
import { getWorkload } from "../db/workloads.ts";
import type { ConfigSnapshot, Pipeline } from "../shared/config/types.ts";
import { type Diagnostic, diagnostic } from "../shared/diagnostics.ts";
import { newId } from "../shared/ids.ts";
import type { Logger } from "../shared/logger.ts";
import type { InvocationJob } from "../shared/queues.ts";
import { recordFileArtifact, recordSurface } from "./artifacts.ts";
import type { CredentialCooldowns } from "./credentials/cooldowns.ts";
import type { CredentialSecrets } from "./credentials/secrets.ts";
import { type ResolvedEvent, resolveEvent, runIdentity } from "./dispatch.ts";
import { LOCAL_LANE, laneFor, targetUsable } from "./lanes.ts";
import { type ProcessSpec, runProcessTree } from "./process-tree.ts";
import { assemblePrompt, promptText } from "./prompt.ts";
import { checkResult } from "./result-check.ts";
import { runCommandAgent } from "./runtimes/command.ts";
import { runOpenAiAgent } from "./runtimes/openai.ts";
import type { AgentOutcome } from "./runtimes/outcome.ts";
import { eventEnvironment, setupStepArgv } from "./setup-steps.ts";
import { settleTrigger, settleTriggerIn } from "./trigger-outcome.ts";
import {
  CheckoutError,
  prepareWorkspace,
  removeCheckout,
  type Workspace,
  workspacePaths,
} from "./workspace.ts";

export interface ExecuteDeps {
  pool: pg.Pool;
  /**
   * For the run's own records (tasks, artifacts, heartbeats, agent tokens): a pool whose sessions
   * commit asynchronously, so a record costs a round trip, not a WAL flush. Claims, finishes,
   * releases and trigger settlement always go through `pool`, with synchronous commits.
   */
  records?: pg.Pool;
  boss: PgBoss;
  config: Readonly<ConfigSnapshot>;
  cooldowns: CredentialCooldowns;
  secrets: CredentialSecrets;
  logger: Logger;
  workerId: string;
  heartbeatMs: number;
  staleAfterMs: number;
  /** starts the children, and kills their process groups when this worker dies (see spawner.ts) */
  spawner?: ProcessSpec["spawner"];
  /** handed to agent processes as SVC_DAEMON_URL next to their SVC_AGENT_TOKEN */
  daemonUrl?: string;
  /** the runs of this worker by invocation id, so a cancellation can reach the one it names */
  runs?: Map<string, RunHandle>;
}

export interface RunHandle {
  /** the invocation was cancelled through the API: stop it and record the cancellation */
  cancel(): void;
}

/** Scopes of the token an agent process gets: the tool protocol and knowledge, never host tools. */
export const SANDBOX_SCOPES = ["mcp:read", "mcp:write", "knowledge:read"];

type RunEnd =
  | { kind: "completed"; result: unknown }
  | { kind: "failed"; diagnostic: Diagnostic }
  /** handed back to the queue: shutdown, or (`credentials`) no target usable right now */
  | { kind: "released"; credentials?: boolean }
  /** cancelled through the API while it ran: the row already says `cancelled` */
  | { kind: "cancelled" };

const RECHECK_SECONDS = 2;

function stepLabel(run: string): string {
  const line = run.split("\n")[0]!.trim();
  return line.length > 80 ? `${line.slice(0, 77)}...` : line;
}

/** What dispatch already read for a run it claimed, so the run does not read it again. */
export interface KnownRun {
  workload: { id: string; trigger_id: string | null; pipeline: string };
  event: ResolvedEvent;
}

/** Runs an invocation this worker holds (claimed from a lane job, or created claimed by dispatch). */
export async function runClaimedInvocation(
  deps: ExecuteDeps,
  claimed: InvocationRow,
  shutdown: AbortSignal,
  known?: KnownRun,
): Promise<void> {
  const { pool, logger, workerId } = deps;
  const invocationId = claimed.id;
  const controller = new AbortController();
  let claimLost = false;
  let cancelled = false;
  const cancel = () => {
    if (cancelled) return;
    cancelled = true;
    logger.info("invocation cancelled: stopping it", {
      event: "invocation.cancelling",
      invocation: invocationId,
    });
    controller.abort();
  };
  deps.runs?.set(invocationId, { cancel });
  const onShutdown = () => controller.abort();
  shutdown.addEventListener("abort", onShutdown, { once: true });
  if (shutdown.aborted) controller.abort();
  const heartbeat = setInterval(() => {
    heartbeatInvocation(deps.records ?? pool, invocationId, workerId)
      .then(async (held) => {
        if (held || claimLost || cancelled) return;
        // the row left `running` under us: cancelled through the API, or taken over by another worker
        if ((await getInvocationStatus(pool, invocationId)) === "cancelled") {
          cancel();
          return;
        }
        claimLost = true;
        logger.warn("invocation claim lost", { event: "invocation.claim_lost", invocation: invocationId });
        controller.abort();
      })
      .catch(() => {}); // a failed heartbeat is retried on the next tick; staleness is judged in the database
  }, deps.heartbeatMs);
  heartbeat.unref();
  const workload = known?.workload ?? (await getWorkload(pool, claimed.workload_id))!;
  const pipeline = deps.config.pipelines[workload.pipeline];
  const paths = workspacePaths(deps.config.dir, workload.id, invocationId);
  let end: RunEnd;
  try {
    logger.info("invocation started", {
      event: "invocation.started",
      invocation: invocationId,
      workload: workload.id,
      pipeline: workload.pipeline,
      attempt: claimed.attempts,
    });
    end = pipeline
      ? await run(deps, {
          invocationId,
          workload,
          pipeline,
          paths,
          signal: controller.signal,
          event: known?.event,
          target: claimed.target,
          isCancelled: () => cancelled,
        })
      : {
          kind: "failed",
          diagnostic: diagnostic(
            "no_matching_pipeline",
            `pipeline ${workload.pipeline} is no longer configured on this worker; it was removed before the run started`,
          ),
        };
  } catch (error) {
    end = {
      kind: "failed",
      diagnostic: diagnostic("agent_failed", `the run failed inside the worker: ${(error as Error).message}`),
    };
  } finally {
    clearInterval(heartbeat);
    shutdown.removeEventListener("abort", onShutdown);
    deps.runs?.delete(invocationId);
  }
  if (claimLost) {
    // another worker took the run over; whatever this one produced is not the record
    logger.warn("run abandoned after its claim was lost", {
      event: "invocation.abandoned",
      invocation: invocationId,
    });
    return;
  }
  if (cancelled || end.kind === "cancelled") {
    // the API already wrote `cancelled` (and its diagnostic); never overwrite it, close what is open
    await closeOpenTasks(pool, invocationId, CANCELLED).catch(() => {});
    await revokeInvocationTokens(deps.records ?? pool, invocationId).catch(() => {});
    if (pipeline && !pipeline.retainCheckout) await removeCheckout(paths).catch(() => {});
    logger.info("invocation cancelled", {
      event: "invocation.cancelled",
      invocation: invocationId,
      pipeline: workload.pipeline,
    });
    if (workload.trigger_id) await settleTrigger(pool, workload.trigger_id);
    return;
  }
  if (end.kind === "released") {
    await release(deps, invocationId, pipeline, end.credentials === true);
    return;
  }
  // before the trigger settles, so a settled trigger never has a checkout left to remove
  if (pipeline && !pipeline.retainCheckout) await removeCheckout(paths).catch(() => {});
  // the run's end and its trigger's settlement commit together: one WAL flush, not two
  const outcome = end;
  const finished = await withTransaction(pool, async (client) => {
    const held = await finishInvocation(client, invocationId, workerId, {
      status: outcome.kind,
      diagnostic: outcome.kind === "failed" ? outcome.diagnostic : null,
      result: outcome.kind === "completed" ? outcome.result : undefined,
    });
    if (held && workload.trigger_id) await settleTriggerIn(client, workload.trigger_id);
    return held;
  });
  if (!finished) {
    // cancelled between the end of the run and this write: the cancellation stands
    if ((await getInvocationStatus(pool, invocationId)) === "cancelled") {
      await closeOpenTasks(pool, invocationId, CANCELLED).catch(() => {});
      if (workload.trigger_id) await settleTrigger(pool, workload.trigger_id);
    }
    return;
  }
  logger.info(`invocation ${end.kind}`, {
    event: `invocation.${end.kind}`,
    invocation: invocationId,
    pipeline: workload.pipeline,
    code: end.kind === "failed" ? end.diagnostic.code : undefined,
  });
}

const CANCELLED = diagnostic(
  "cancelled",
  "the invocation was cancelled while it ran; its process tree was killed",
);

/** Back to `queued` with a fresh lane job, in one transaction, so the run is never lost in between. */
async function release(
  deps: ExecuteDeps,
  invocationId: string,
  pipeline: Pipeline | undefined,
  waiting: boolean,
) {
  const lane = pipeline
    ? laneFor(pipeline, deps.config, deps.cooldowns, deps.secrets)
    : { queue: LOCAL_LANE, target: null };
  await withTransaction(deps.pool, async (client) => {
    if (!(await releaseInvocation(client, invocationId, deps.workerId))) return;
    const job: InvocationJob = { invocationId };
    // a run waiting for a credential is not offered again at once: the lane is about to stop,
    // and an immediate job would spin between claim and release until it does
    await deps.boss.send(lane.queue, job, {
      db: transactionDb(client),
      ...(waiting ? { startAfter: RECHECK_SECONDS } : {}),
    });
  });
  if (!waiting) wakeWorkers(deps.boss, lane.queue);
  deps.logger.info("invocation released for retry", {
    event: "invocation.released",
    invocation: invocationId,
    lane: lane.queue,
  });
}

interface RunInput {
  invocationId: string;
  workload: { id: string; trigger_id: string | null; pipeline: string };
  pipeline: Pipeline;
  paths: Workspace;
  signal: AbortSignal;
  /** already resolved by dispatch */
  event?: ResolvedEvent;
  /** the target the invocation row names already */
  target: string | null;
  isCancelled: () => boolean;
}

async function run(deps: ExecuteDeps, input: RunInput): Promise<RunEnd> {
  const { config } = deps;
  const pool = deps.records ?? deps.pool;
  const { invocationId, pipeline, paths, signal } = input;
  const trigger =
    input.event || !input.workload.trigger_id ? undefined : await getTrigger(pool, input.workload.trigger_id);
  const event: ResolvedEvent = input.event
    ? input.event
    : trigger
      ? await resolveEvent(pool, trigger)
      : {
          kind: "manual",
          source: pipeline.name,
          eventName: pipeline.name,
          payload: {},
          context: { repo: "", sha: "", branch: "" },
        };
  const { repo, sha, branch } = event.context;
  let seq = 0;
  try {
    await prepareWorkspace(paths, {
      cloneUrl: repo ? config.repos[repo]?.cloneUrl : undefined,
      sha,
      branch,
    });
  } catch (error) {
    if (!(error instanceof CheckoutError)) throw error;
    return {
      kind: "failed",
      diagnostic: diagnostic(
        "setup_failed",
        `cloning ${repo} at ${sha || branch || "its default branch"} failed: ${error.message}`,
        {
          field: "checkout",
        },
      ),
    };
  }
  const env = eventEnvironment(paths, event, pipeline);

  for (const [index, step] of pipeline.setup.entries()) {
    const taskId = newId("task");
    const name = `setup[${index}]: ${stepLabel(step.run)}`;
    const logFile = join(paths.logsDir, `setup-${index}.log`);
    const running = runProcessTree({
      argv: setupStepArgv(step.run),
      cwd: paths.checkout,
      env,
      logFile,
      truncate: true,
      signal,
      spawner: deps.spawner,
    });
    // the task row is written while the step runs: the step does not wait for the database
    const started = startTask(pool, { id: taskId, invocationId, kind: "setup", name, seq: seq++ });
    started.catch(() => {});
    const outcome = await running;
    await started;
    await recordFileArtifact(pool, {
      invocationId,
      taskId,
      name: `setup-${index}.log`,
      path: logFile,
      mediaType: "text/plain",
    });
    if (outcome.aborted) {
      if (input.isCancelled()) {
        await finishTask(pool, taskId, { status: "skipped", diagnostic: CANCELLED });
        return { kind: "cancelled" };
      }
      await finishTask(pool, taskId, { status: "skipped" });
      return { kind: "released" };
    }
    if (outcome.exitCode !== 0) {
      const failure = diagnostic(
        "setup_failed",
        `setup step ${index} (${stepLabel(step.run)}) exited with ${outcome.exitCode ?? outcome.signal ?? outcome.spawnError}`,
        { field: `setup[${index}]`, metadata: { step: index, run: step.run, exitCode: outcome.exitCode } },
      );
      await finishTask(pool, taskId, { status: "failed", exitCode: outcome.exitCode, diagnostic: failure });
      await recordSurface(pool, invocationId, paths.surfaceDir);
      return { kind: "failed", diagnostic: failure };
    }
    await finishTask(pool, taskId, { status: "completed", exitCode: 0 });
  }

  let result: unknown = null;
  if (pipeline.targets.length > 0) {
    const { agent, skill } = runIdentity(pipeline, event.context);
    const prompt = assemblePrompt({
      config,
      pipeline,
      agent,
      skill,
      event: { name: event.eventName, source: event.kind, payload: event.payload },
    });
    const transcript = join(paths.logsDir, "transcript.log");
    await writeFile(transcript, "");
    const unavailable: Diagnostic[] = [];
    let outcome: AgentOutcome | undefined;
    let ranOn: string | undefined;
    for (const name of pipeline.targets) {
      const target = config.targets[name];
      if (!target || !targetUsable(target, deps.cooldowns, deps.secrets)) continue;
      const taskId = newId("task");
      await startTask(pool, {
        id: taskId,
        invocationId,
        kind: "agent",
        name: `agent on ${name}`,
        seq: seq++,
      });
      if (name !== input.target) await setInvocationTarget(pool, invocationId, name);
      ranOn = name;
      outcome =
        target.runtime === "command"
          ? await runWithSandboxToken(deps, invocationId, target.timeoutMs, (agentEnv) =>
              runCommandAgent({
                target,
                configDir: config.dir,
                cwd: paths.checkout,
                env: { ...env, ...agentEnv },
                stdin: promptText(prompt),
                transcriptFile: transcript,
                signal,
                spawner: deps.spawner,
              }),
            )
          : await runOpenAiAgent({
              target,
              prompt,
              cooldowns: deps.cooldowns,
              secrets: deps.secrets,
              transcriptFile: transcript,
              signal,
            });
      const recorded = recordFileArtifact(pool, {
        invocationId,
        taskId,
        name: "transcript",
        path: transcript,
        mediaType: "text/plain",
      });
      recorded.catch(() => {});
      if (outcome.kind === "result") {
        // independent rows: written side by side
        await Promise.all([recorded, finishTask(pool, taskId, { status: "completed", exitCode: 0 })]);
        break;
      }
      await recorded;
      if (outcome.kind === "aborted") {
        if (input.isCancelled()) {
          await finishTask(pool, taskId, { status: "skipped", diagnostic: CANCELLED });
          return { kind: "cancelled" };
        }
        await finishTask(pool, taskId, { status: "skipped" });
        return { kind: "released" };
      }
      if (outcome.kind === "failed") {
        await finishTask(pool, taskId, { status: "failed", diagnostic: outcome.diagnostic });
        await recordSurface(pool, invocationId, paths.surfaceDir);
        return { kind: "failed", diagnostic: outcome.diagnostic };
      }
      await finishTask(pool, taskId, { status: "skipped", diagnostic: outcome.diagnostic ?? null });
      if (outcome.diagnostic) unavailable.push(outcome.diagnostic);
    }
    if (outcome?.kind !== "result") {
      if (unavailable.length === 0) {
        // every target lacks a usable credential: nothing failed; the run waits on a stopped lane
        // until a probe or a restart brings a credential back
        return { kind: "released", credentials: true };
      }
      return {
        kind: "failed",
        diagnostic: diagnostic(
          "target_unavailable",
          `no target of pipeline ${pipeline.name} could run the agent`,
          {
            details: unavailable,
          },
        ),
      };
    }
    result = outcome.result;
    const resultFile = join(paths.logsDir, "result.json");
    await writeFile(resultFile, `${JSON.stringify(result, null, 2)}\n`);
    const checkId = newId("task");
    await startTask(pool, {
      id: checkId,
      invocationId,
      kind: "result_check",
      name: "result.schema",
      seq: seq++,
    });
    const recorded = recordFileArtifact(pool, {
      invocationId,
      taskId: checkId,
      name: "result.json",
      path: resultFile,
    });
    const invalid = pipeline.result ? checkResult(pipeline.result.schema, result) : null;
    if (invalid) {
      await Promise.all([recorded, finishTask(pool, checkId, { status: "failed", diagnostic: invalid })]);
      await recordSurface(pool, invocationId, paths.surfaceDir);
      return { kind: "failed", diagnostic: { ...invalid, target: ranOn } };
    }
    await Promise.all([
      recorded,
      finishTask(pool, checkId, { status: pipeline.result ? "completed" : "skipped" }),
    ]);
  }
  await recordSurface(pool, invocationId, paths.surfaceDir);
  return { kind: "completed", result };
}

/**
 * An agent process gets its own API token (`SVC_AGENT_TOKEN`, sandboxed: host tools refuse it) and
 * the daemon's address (`SVC_DAEMON_URL`); setup steps never see either. The token is revoked when
 * the run ends, and expires on its own shortly after the target's timeout should the worker die.
 */
async function runWithSandboxToken<T>(
  deps: ExecuteDeps,
  invocationId: string,
  timeoutMs: number,
  work: (agentEnv: Record<string, string>) => Promise<T>,
): Promise<T> {
  const token = await issueSandboxToken(deps.records ?? deps.pool, {
    invocationId,
    scopes: SANDBOX_SCOPES,
    expiresAt: new Date(Date.now() + timeoutMs + 60_000),
  });
  try {
    return await work({
      SVC_AGENT_TOKEN: token.token,
      ...(deps.daemonUrl ? { SVC_DAEMON_URL: deps.daemonUrl } : {}),
    });
  } finally {
    await revokeInvocationTokens(deps.records ?? deps.pool, invocationId).catch(() => {});
  }
}
