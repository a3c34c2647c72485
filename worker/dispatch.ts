import type pg from "pg";
import type { PgBoss } from "pg-boss";
import { transactionDb, wakeWorkers } from "../db/boss.ts";
import {
  type InvocationRow,
  insertInvocation,
  insertWorkloadWithClaimedInvocation,
} from "../db/invocations.ts";
import { type LockedTrigger, lockTrigger } from "../db/trigger-status.ts";
import { getTrigger, setTriggerStatus } from "../db/triggers.ts";
import { insertWorkload } from "../db/workloads.ts";
import type { ConfigSnapshot, Pipeline } from "../shared/config/types.ts";
import { type Diagnostic, diagnostic } from "../shared/diagnostics.ts";
import { newId } from "../shared/ids.ts";
import type { Logger } from "../shared/logger.ts";
import type { InvocationJob } from "../shared/queues.ts";
import { DISPATCH_QUEUE } from "../shared/queues.ts";
import type { CredentialCooldowns } from "./credentials/cooldowns.ts";
import type { CredentialSecrets } from "./credentials/secrets.ts";
import { type EventContext, eventContext } from "./event-context.ts";
import { laneFor } from "./lanes.ts";
import { matchPipelines } from "./match-pipelines.ts";
import { workspacePaths } from "./workspace.ts";

export interface DispatchDeps {
  pool: pg.Pool;
  boss: PgBoss;
  config: Readonly<ConfigSnapshot>;
  cooldowns: CredentialCooldowns;
  secrets: CredentialSecrets;
  logger: Logger;
}

/** What a trigger means once a replay is resolved to the trigger it replays. */
export interface ResolvedEvent {
  kind: string;
  source: string;
  eventName: string;
  payload: unknown;
  context: EventContext;
}

function isEmptyObject(value: unknown): boolean {
  return value !== null && typeof value === "object" && Object.keys(value as object).length === 0;
}

/** A replay runs as its original did: the original's kind, source and event name (and payload unless it sent one). */
export async function resolveEvent(
  db: pg.Pool | pg.ClientBase,
  trigger: {
    kind: string;
    source: string;
    event_name?: string;
    eventName?: string;
    payload: unknown;
    replay_of?: string | null;
    replayOf?: string | null;
  },
): Promise<ResolvedEvent> {
  let kind = trigger.kind;
  let source = trigger.source;
  let eventName = trigger.event_name ?? trigger.eventName ?? "";
  let payload = trigger.payload;
  const replayOf = trigger.replay_of ?? trigger.replayOf;
  if (kind === "replay" && replayOf) {
    const original = await getTrigger(db, replayOf);
    if (original) {
      kind = original.kind;
      source = original.source;
      eventName = original.eventName;
      if (payload === null || payload === undefined || isEmptyObject(payload)) payload = original.payload;
    }
  }
  // a replayed manual fire still names its agent or skill in the payload
  const context = eventContext(trigger.kind === "replay" && kind !== "tracker" ? "replay" : kind, payload);
  return { kind, source, eventName, payload, context };
}

/** The agent and skill a pipeline runs with for this event: a fire request may name its own. */
export function runIdentity(pipeline: Pipeline, context: EventContext): { agent?: string; skill?: string } {
  return { agent: context.agent ?? pipeline.agent, skill: context.skill ?? pipeline.skill };
}

function unknownReference(
  config: Readonly<ConfigSnapshot>,
  pipelines: Pipeline[],
  context: EventContext,
): Diagnostic | null {
  if (context.agent && !config.agents[context.agent]) {
    return diagnostic(
      "unknown_agent_reference",
      `the event names agent "${context.agent}", which is not configured`,
      {
        field: "agent",
      },
    );
  }
  if (context.skill && !config.skills[context.skill]) {
    return diagnostic(
      "unknown_agent_reference",
      `the event names skill "${context.skill}", which is not configured`,
      {
        field: "skill",
      },
    );
  }
  for (const pipeline of pipelines) {
    const { agent, skill } = runIdentity(pipeline, context);
    if (agent && !config.agents[agent]) {
      return diagnostic(
        "unknown_agent_reference",
        `pipeline ${pipeline.name} runs agent "${agent}", which is not configured`,
        {
          field: "agent",
        },
      );
    }
    for (const name of [skill, ...pipeline.companions]) {
      if (name && !config.skills[name]) {
        return diagnostic(
          "unknown_agent_reference",
          `pipeline ${pipeline.name} uses skill "${name}", which is not configured`,
          {
            field: "skill",
          },
        );
      }
    }
  }
  return null;
}

export interface DispatchOptions {
  /** the pg-boss dispatch job being worked: completed inside the dispatch transaction */
  jobId?: string;
  /**
   * The dispatching worker, when it has a free slot: the first invocation whose lane is usable is
   * created already held by it (`running`, heartbeat now) and comes back to be run in-process, with
   * no lane job and no second trip through the queue.
   */
  claimFor?: string;
}

/** An invocation dispatch created already claimed by this worker, with what its run needs. */
export interface ClaimedRun {
  invocation: InvocationRow;
  workload: { id: string; trigger_id: string | null; pipeline: string };
  event: ResolvedEvent;
}

export type DispatchOutcome = Awaited<ReturnType<typeof dispatchInTransaction>>;

/**
 * Turns one trigger into its run: workloads and invocations, each invocation enqueued on its lane
 * (or the first one created claimed by this worker), all in the caller's transaction under the
 * trigger's row lock. A crash leaves either nothing or everything, and a retried dispatch job finds
 * the trigger no longer `queued` and does nothing. The dispatch job is completed in the same
 * transaction.
 */
export async function dispatchInTransaction(
  deps: DispatchDeps,
  client: pg.ClientBase,
  triggerId: string,
  options: DispatchOptions = {},
) {
  const { config } = deps;
  const done = async () => {
    if (options.jobId)
      await deps.boss.complete(DISPATCH_QUEUE, options.jobId, null, { db: transactionDb(client) });
  };
  const trigger = await lockTrigger(client, triggerId);
  if (!trigger) {
    await done();
    return { kind: "missing" as const };
  }
  if (trigger.status !== "queued" || trigger.has_workloads) {
    await done();
    return { kind: "already" as const };
  }
  const event = await resolveEvent(client, trigger);
  let pipelines = matchPipelines(config, {
    kind: event.kind,
    source: event.source,
    eventName: event.eventName,
    repo: event.context.repo,
  });
  // an agent-session event addresses one agent: only that agent's pipelines answer it
  if (event.kind === "tracker" && event.context.agent) {
    pipelines = pipelines.filter((pipeline) => pipeline.agent === event.context.agent);
  }
  const unknown = unknownReference(config, pipelines, event.context);
  if (unknown) {
    await setTriggerStatus(client, triggerId, "discarded", { code: unknown.code, message: unknown.message });
    await done();
    return { kind: "discarded" as const, diagnostic: unknown };
  }
  if (pipelines.length === 0) {
    const none = diagnostic(
      "no_matching_pipeline",
      `no pipeline is fired by ${event.kind} ${event.kind === "webhook" ? `route ${event.source}` : `event ${event.eventName}`}`,
    );
    await setTriggerStatus(client, triggerId, "completed", none);
    await done();
    return { kind: "none" as const };
  }
  const run = await createRun(deps, client, { trigger, event, pipelines, claimFor: options.claimFor });
  await done();
  return { kind: "dispatched" as const, ...run };
}

/**
 * The one place that creates a run: a workload and an invocation per pipeline. The first invocation
 * whose lane can run now is created held by `claimFor` (it runs in-process, without a job); every
 * other one gets a job on its lane. The trigger moves to `running`.
 */
async function createRun(
  deps: DispatchDeps,
  client: pg.ClientBase,
  run: { trigger: LockedTrigger; event: ResolvedEvent; pipelines: Pipeline[]; claimFor: string | undefined },
): Promise<{ created: CreatedInvocation[]; claimed: ClaimedRun | undefined }> {
  const { config } = deps;
  const { trigger, event } = run;
  const created: CreatedInvocation[] = [];
  let claimed: ClaimedRun | undefined;
  for (const pipeline of run.pipelines) {
    const workloadId = newId("workload");
    const invocationId = newId("invocation");
    const lane = laneFor(pipeline, config, deps.cooldowns, deps.secrets);
    const rows = {
      workloadId,
      triggerId: trigger.id,
      pipeline: pipeline.name,
      owner: trigger.owner,
      workspace: workspacePaths(config.dir, workloadId, invocationId).root,
      invocationId,
      target: lane.target,
    };
    const entry = { workload: workloadId, invocation: invocationId, pipeline: pipeline.name };
    if (run.claimFor && !claimed && lane.usable) {
      const invocation = await insertWorkloadWithClaimedInvocation(client, {
        ...rows,
        workerId: run.claimFor,
      });
      claimed = {
        invocation,
        workload: { id: workloadId, trigger_id: trigger.id, pipeline: pipeline.name },
        event,
      };
      created.push({ ...entry, lane: "in-process" });
      continue;
    }
    await insertWorkload(client, { ...rows, id: workloadId });
    await insertInvocation(client, { id: invocationId, workloadId, target: lane.target });
    const job: InvocationJob = { invocationId };
    await deps.boss.send(lane.queue, job, { db: transactionDb(client) });
    created.push({ ...entry, lane: lane.queue });
  }
  // a claimed run's insert already moved the trigger to `running`
  if (!claimed) await setTriggerStatus(client, trigger.id, "running");
  return { created, claimed };
}

interface CreatedInvocation {
  workload: string;
  invocation: string;
  pipeline: string;
  /** its lane queue, or `in-process` when this worker holds it */
  lane: string;
}

/** After the dispatch transaction committed: logs, and wakes the lanes it sent jobs to. */
export function afterDispatch(
  deps: DispatchDeps,
  triggerId: string,
  outcome: DispatchOutcome,
): ClaimedRun | undefined {
  const { logger } = deps;
  switch (outcome.kind) {
    case "missing":
      logger.warn("dispatch job names no trigger", { event: "dispatch.missing_trigger", trigger: triggerId });
      break;
    case "discarded":
      logger.info("trigger discarded", {
        event: "trigger.discarded",
        trigger: triggerId,
        code: outcome.diagnostic.code,
      });
      break;
    case "none":
      logger.info("trigger fired no pipeline", { event: "trigger.no_matching_pipeline", trigger: triggerId });
      break;
    case "dispatched":
      // after the commit, never inside it (see wakeWorkers): the lane's workers look at once
      for (const lane of new Set(outcome.created.map((entry) => entry.lane)))
        if (lane !== "in-process") wakeWorkers(deps.boss, lane);
      for (const entry of outcome.created) {
        logger.info("workload created", { event: "trigger.dispatched", trigger: triggerId, ...entry });
      }
      return outcome.claimed;
    default:
      break;
  }
  return undefined;
}
