import { createHash } from "node:crypto";
import type pg from "pg";
import type { PgBoss } from "pg-boss";
import { transactionDb } from "../../db/boss.ts";
import {
  endOvertaken,
  lockGroups,
  type SupersededRun,
  supersedeInGroup,
} from "../../db/concurrency-groups.ts";
import {
  type InvocationRow,
  insertQueuedRuns,
  insertWorkloadWithClaimedInvocation,
  type QueuedRun,
} from "../../db/invocations.ts";
import { type LockedTrigger, lockTriggers, settleTriggerIn } from "../../db/trigger-status.ts";
import { setTriggerStatuses, type TriggerStatus } from "../../db/triggers.ts";
import type { ConfigSnapshot, Pipeline } from "../../shared/config/types.ts";
import { type Diagnostic, diagnostic } from "../../shared/diagnostics.ts";
import { newId } from "../../shared/ids.ts";
import type { Logger } from "../../shared/logger.ts";
import { DISPATCH_QUEUE, type DispatchJob, type InvocationJob } from "../../shared/queues.ts";
import { workspacePaths } from "../../shared/workspace-layout.ts";
import type { CredentialCooldowns } from "../credentials/cooldowns.ts";
import type { CredentialSecrets } from "../credentials/secrets.ts";
import { concurrencyGroup } from "../event/group.ts";
import { type ResolvedEvent, resolveEvent } from "../event/resolve.ts";
import type { CommandReaction } from "../outputs/reactions.ts";
import { admit, type Gated } from "./admission.ts";
import { changedFilesFor } from "./changed-files.ts";
import { noMatch, pipelinesFor, unknownReference } from "./dispatch-match.ts";
import { withGithubFacts } from "./github-facts.ts";
import { withGitlabAuthor } from "./gitlab-author.ts";
import { laneFor } from "./lanes.ts";
import { type Instant, type Lease, laneLeaseOptions, NEVER, takeLeases } from "./run-leases.ts";

export interface DispatchDeps {
  pool: pg.Pool;
  boss: PgBoss;
  config: Readonly<ConfigSnapshot>;
  cooldowns: CredentialCooldowns;
  secrets: CredentialSecrets;
  logger: Logger;
  /** the heartbeatSeconds of the leases of runs this worker claims (worker/queue/run-leases.ts) */
  leaseSeconds: number;
}

/** An invocation dispatch created already claimed by this worker, with what its run needs. */
export interface ClaimedRun {
  invocation: InvocationRow;
  workload: { id: string; trigger_id: string | null; pipeline: string };
  event: ResolvedEvent;
  /** the pipeline's circuit breaker as the claim read it: the time it closes, null when closed */
  breakerOpenUntil: Date | null;
  /** the pg-boss job that stays active while the run is held (worker/queue/run-leases.ts) */
  lease?: Lease;
}

export type DispatchOutcome =
  | { kind: "missing" }
  | { kind: "already" }
  | { kind: "discarded"; diagnostic: Diagnostic }
  | ({ kind: "none"; diagnostic: Diagnostic } & Admitted)
  | ({
      kind: "dispatched";
      created: CreatedInvocation[];
      claimed: ClaimedRun | undefined;
      /** the invocations of its concurrency groups it superseded (held elsewhere: told to stop after the commit) */
      superseded: SupersededRun[];
    } & Admitted);

/** What admission (worker/queue/admission.ts) leaves to say after the commit. */
interface Admitted {
  gated: Gated | null;
  reaction: CommandReaction | null;
}

/**
 * How many runs a dispatch batch may still create held by `workerId` (its free slots): the first
 * invocation of a trigger whose lane is usable is created `running` (heartbeat now) and comes back
 * to be run in-process, with no lane job and no second trip through the queue.
 */
export interface DispatchClaims {
  workerId: string;
  left: number;
  /** an instant before the dispatch transaction began (see Lease.takenAt) */
  takenAt?: Instant;
}

/**
 * Turns a batch of dispatch jobs into runs in the caller's transaction: every trigger is row-locked
 * first (one statement), each becomes workloads and invocations (createRun); the queued runs, their
 * lane jobs and the triggers' new statuses are written at the end (writeBatch), and the jobs are
 * completed in one call, so a batch costs a few statements whatever its size. A crash leaves either
 * nothing or everything, and a retried job finds its trigger no longer `queued` and does nothing.
 */
export async function dispatchTriggers(
  deps: DispatchDeps,
  client: pg.ClientBase,
  jobs: { id: string; data: DispatchJob }[],
  claims: DispatchClaims,
): Promise<{ triggerId: string; outcome: DispatchOutcome }[]> {
  const locked = await lockTriggers(
    client,
    jobs.map((job) => job.data.triggerId),
  );
  const batch: BatchWrites = { queued: [], jobs: new Map(), statuses: [], superseded: [] };
  const events = await resolveBatch(deps, client, [...locked.values()]);
  const outcomes: { triggerId: string; outcome: DispatchOutcome }[] = [];
  const seen = new Set<string>();
  for (const job of jobs) {
    const { triggerId } = job.data;
    // a trigger named by two jobs of one batch is dispatched by the first
    const outcome: DispatchOutcome = seen.has(triggerId)
      ? { kind: "already" }
      : await dispatchTrigger(deps, client, locked.get(triggerId), events.get(triggerId), claims, batch);
    seen.add(triggerId);
    if (outcome.kind === "discarded" || outcome.kind === "none") {
      const { code, message } = outcome.diagnostic;
      const status = outcome.kind === "none" ? "completed" : "discarded";
      batch.statuses.push({ id: triggerId, status, diagnostic: { code, message } });
    }
    outcomes.push({ triggerId, outcome });
  }
  await writeBatch(deps, client, batch);
  dropSupersededClaims(outcomes, batch, claims);
  await leaseClaimedRuns(deps, client, claims, outcomes);
  await deps.boss.complete(
    DISPATCH_QUEUE,
    jobs.map((job) => job.id),
    null,
    { db: transactionDb(client, { prepare: true }) },
  );
  return outcomes;
}

/**
 * Resolves the events of the batch's undispatched triggers once, and takes the locks of every
 * concurrency group their runs join, in one statement and one order before any run is created, so
 * two workers dispatching batches that share groups wait for each other instead of deadlocking.
 */
async function resolveBatch(
  deps: DispatchDeps,
  client: pg.ClientBase,
  triggers: LockedTrigger[],
): Promise<Map<string, ResolvedEvent>> {
  const events = new Map<string, ResolvedEvent>();
  const groups: string[] = [];
  for (const trigger of triggers) {
    if (trigger.status !== "queued" || trigger.has_workloads) continue;
    const event = await resolveEvent(client, trigger);
    events.set(trigger.id, event);
    for (const pipeline of pipelinesFor(deps.config, event, onePipeline(trigger))) {
      const group = concurrencyGroup(pipeline, event.context, apart(trigger));
      if (group) groups.push(group);
    }
  }
  await lockGroups(client, groups);
  return events;
}

/**
 * A run created held by this worker and superseded by a later event of its group in the same batch
 * is not started: its row already says `cancelled`.
 */
function dropSupersededClaims(
  outcomes: { outcome: DispatchOutcome }[],
  batch: BatchWrites,
  claims: DispatchClaims,
): void {
  const gone = new Set(batch.superseded.map((run) => run.id));
  for (const { outcome } of outcomes) {
    if (outcome.kind !== "dispatched" || !outcome.claimed || !gone.has(outcome.claimed.invocation.id))
      continue;
    outcome.claimed = undefined;
    claims.left += 1;
  }
}

/** The runs this batch created held by this worker get their leases in the same transaction. */
async function leaseClaimedRuns(
  deps: DispatchDeps,
  client: pg.ClientBase,
  claims: DispatchClaims,
  outcomes: { outcome: DispatchOutcome }[],
): Promise<void> {
  const { workerId } = claims;
  const runs = outcomes.flatMap(({ outcome }) =>
    outcome.kind === "dispatched" && outcome.claimed ? [outcome.claimed] : [],
  );
  if (runs.length === 0) return;
  const leases = await takeLeases(
    deps.boss,
    client,
    runs.map((run) => ({ invocationId: run.invocation.id, workerId, attempts: run.invocation.attempts })),
    deps.leaseSeconds,
    // unknown: no local bound, so every check of the claim asks pg-boss
    claims.takenAt ?? NEVER,
  );
  for (const run of runs) run.lease = leases.get(run.invocation.id);
}

async function dispatchTrigger(
  deps: DispatchDeps,
  client: pg.ClientBase,
  trigger: LockedTrigger | undefined,
  resolved: ResolvedEvent | undefined,
  claims: DispatchClaims,
  batch: BatchWrites,
): Promise<DispatchOutcome> {
  if (!trigger) return { kind: "missing" };
  if (trigger.status !== "queued" || trigger.has_workloads) return { kind: "already" };
  // what the payload cannot say, asked of the code host and kept on the trigger (fail closed)
  const stated = resolved ?? (await resolveEvent(client, trigger));
  const event = await withGithubFacts(
    deps,
    client,
    trigger,
    await withGitlabAuthor(deps, client, trigger, stated),
  );
  const evalRun = onePipeline(trigger);
  // a pull request's changed files, read only when a `paths` filter of a matched pipeline needs them
  const files = await changedFilesFor(deps, event, evalRun);
  const admission = await admit(deps.config, client, event, evalRun, files);
  const { gated, reaction } = admission;
  if (admission.kind === "stop") return { kind: "none", diagnostic: admission.diagnostic, gated, reaction };
  const { pipelines } = admission;
  const unknown = unknownReference(deps.config, pipelines, event.context);
  if (unknown) return { kind: "discarded", diagnostic: unknown };
  if (pipelines.length === 0) return { kind: "none", diagnostic: noMatch(event), gated, reaction };
  if (trigger.backtest_id !== null && !pipelines[0]!.shadow?.candidate)
    return { kind: "discarded", diagnostic: noCandidate(pipelines[0]!) };
  const claimFor = claims.left > 0 ? claims.workerId : undefined;
  const run = await createRun(deps, client, { trigger, event, pipelines, claimFor }, batch);
  if (run.claimed) claims.left -= 1;
  return { kind: "dispatched", ...run, gated, reaction };
}

/**
 * What a dispatch batch writes at its end in a few statements whatever its size: the queued runs
 * (workloads, invocations, lane jobs) and the new statuses of its triggers.
 */
interface BatchWrites {
  queued: QueuedRun[];
  jobs: Map<string, InvocationJob[]>;
  statuses: { id: string; status: TriggerStatus; diagnostic: Diagnostic | null }[];
  /** invocations of concurrency groups that a newer event of the batch superseded */
  superseded: SupersededRun[];
}

async function writeBatch(deps: DispatchDeps, client: pg.ClientBase, batch: BatchWrites): Promise<void> {
  await insertQueuedRuns(client, batch.queued);
  // each sent as the lease of the claim it is for (worker/queue/run-leases.ts)
  const options = laneLeaseOptions(deps.config.targets, deps.leaseSeconds);
  for (const [queue, jobs] of batch.jobs)
    await deps.boss.insert(
      queue,
      jobs.map((data) => ({ data, ...options })),
      { db: transactionDb(client, { prepare: true }) },
    );
  await setTriggerStatuses(client, batch.statuses);
  // after the statuses: the trigger of every superseded run settles from it now, also when a worker
  // holds the run and is still stopping it (that worker settles it again): were that worker dead,
  // nothing else would
  const settle = [...new Set(batch.superseded.flatMap((run) => (run.trigger_id ? [run.trigger_id] : [])))];
  for (const triggerId of settle.sort()) await settleTriggerIn(client, triggerId);
}

/**
 * The one place that creates a run: a workload and an invocation per pipeline. The first invocation
 * whose lane can run now is created held by `claimFor` (it runs in-process, without a job, and its
 * insert moves the trigger to `running`); every other one is queued with a job on its lane, written
 * with the rest of the batch.
 */
async function createRun(
  deps: DispatchDeps,
  client: pg.ClientBase,
  run: { trigger: LockedTrigger; event: ResolvedEvent; pipelines: Pipeline[]; claimFor: string | undefined },
  batch: BatchWrites,
): Promise<{ created: CreatedInvocation[]; claimed: ClaimedRun | undefined; superseded: SupersededRun[] }> {
  const { config } = deps;
  const { trigger, event } = run;
  const created: CreatedInvocation[] = [];
  const superseded: SupersededRun[] = [];
  let claimed: ClaimedRun | undefined;
  // the live runs first, so a shadow (a candidate version, outputs held back) never goes before them
  // a backtest's replay runs the candidate alone (its pipeline's, checked by dispatchTrigger)
  const runs =
    trigger.backtest_id !== null
      ? run.pipelines.map((pipeline) => ({ pipeline: pipeline.shadow!.candidate!, shadow: true }))
      : [
          ...run.pipelines.map((pipeline) => ({ pipeline, shadow: false })),
          ...(apart(trigger) ? [] : shadowsOf(run.pipelines, trigger.id)),
        ];
  for (const { pipeline, shadow } of runs) {
    const workloadId = newId("workload");
    const invocationId = newId("invocation");
    // a shadow waits on its target's shadow lane, fetched after every live run (lanes.ts)
    const lane = laneFor(pipeline, config, deps.cooldowns, deps.secrets, shadow);
    const group = shadow ? null : concurrencyGroup(pipeline, event.context, apart(trigger));
    const rows: QueuedRun = {
      workloadId,
      triggerId: trigger.id,
      pipeline: pipeline.name,
      pipelineVersion: pipeline.version,
      owner: trigger.owner,
      workspace: workspacePaths(config.dir, workloadId, invocationId).root,
      invocationId,
      target: lane.target,
      group,
      headSha: group && event.context.sha ? event.context.sha : null,
      outputsHeld: trigger.hold_outputs || shadow,
      shadow,
    };
    const entry = { workload: workloadId, invocation: invocationId, pipeline: pipeline.name };
    if (group) {
      // the group's lock is held since resolveBatch
      const joined = await supersedeInGroup(client, {
        key: group,
        triggerId: trigger.id,
        cancelRunning: pipeline.concurrency?.cancelInProgress === true,
      });
      superseded.push(...joined.superseded);
      batch.superseded.push(...joined.superseded);
      if (joined.overtakenBy) {
        // an older event dispatched late: the group holds a newer one, so this one never runs
        await insertQueuedRuns(client, [rows]);
        await endOvertaken(client, invocationId, group, joined.overtakenBy);
        batch.superseded.push({ id: invocationId, was: "queued", trigger_id: trigger.id });
        created.push({ ...entry, lane: OVERTAKEN });
        continue;
      }
      if (joined.held) {
        // waits, queued without a lane job, until the group's running invocation ends (nextInGroup)
        await insertQueuedRuns(client, [rows]);
        created.push({ ...entry, lane: WAITING });
        continue;
      }
    }
    if (run.claimFor && !claimed && lane.usable && !shadow) {
      const { invocation, breakerOpenUntil } = await insertWorkloadWithClaimedInvocation(client, {
        ...rows,
        workerId: run.claimFor,
      });
      claimed = {
        invocation,
        workload: { id: workloadId, trigger_id: trigger.id, pipeline: pipeline.name },
        event,
        breakerOpenUntil,
      };
      created.push({ ...entry, lane: "in-process" });
      continue;
    }
    // a grouped run is written now, so that a later event of its group in this batch finds it
    if (group) await insertQueuedRuns(client, [rows]);
    else batch.queued.push(rows);
    const jobs = batch.jobs.get(lane.queue) ?? [];
    // a new invocation's first claim makes its attempt 1
    jobs.push({ invocationId, attempt: 1, ...(group ? { group } : {}) });
    batch.jobs.set(lane.queue, jobs);
    created.push({ ...entry, lane: lane.queue });
  }
  if (!claimed) batch.statuses.push({ id: trigger.id, status: "running", diagnostic: null });
  return { created, claimed, superseded };
}

/**
 * The shadow runs an event gets (issue 57): each pipeline's candidate version, on the `share` of
 * events its trigger id draws (the same trigger always draws the same, so a redelivery or a retried
 * dispatch makes the same decision).
 */
function shadowsOf(pipelines: Pipeline[], triggerId: string): { pipeline: Pipeline; shadow: true }[] {
  return pipelines.flatMap((pipeline) => {
    const shadow = pipeline.shadow;
    if (!shadow?.candidate) return [];
    const draw =
      createHash("sha256").update(`${triggerId}:${pipeline.name}`).digest().readUInt32BE(0) / 2 ** 32;
    return draw < shadow.share ? [{ pipeline: shadow.candidate, shadow: true as const }] : [];
  });
}

/** An eval run's or a backtest's replay runs the one pipeline its `source` names (worker/event/match.ts). */
function onePipeline(trigger: LockedTrigger): boolean {
  return trigger.eval_run_id !== null || trigger.backtest_id !== null;
}

/** A backtest's replay whose pipeline no longer has the shadow candidate it was started for. */
function noCandidate(pipeline: Pipeline): Diagnostic {
  return diagnostic(
    "no_matching_pipeline",
    `the backtest replays the shadow candidate of pipeline ${pipeline.name}, which names none this worker loaded now; set shadow.version_file again (svc pipeline shadow ${pipeline.name} <file>) and start a new backtest`,
  );
}

/**
 * An eval run's replay and a run whose outputs are held back stand apart from the live runs of
 * their pull request: they join no concurrency group, so they neither cancel a live review nor
 * wait for one, and a later push does not cancel them.
 */
function apart(trigger: LockedTrigger): boolean {
  return trigger.eval_run_id !== null || trigger.hold_outputs;
}

/** The lane of a created invocation that waits for its concurrency group's running one. */
export const WAITING = "waiting";
/** The lane of a created invocation whose group already holds a newer event: it never runs. */
export const OVERTAKEN = "superseded";

interface CreatedInvocation {
  workload: string;
  invocation: string;
  pipeline: string;
  /** its lane queue, `in-process` when this worker holds it, `waiting` for its concurrency group, or `superseded` */
  lane: string;
}
