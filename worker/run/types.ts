import type pg from "pg";
import type { PgBoss } from "pg-boss";
import type { InvocationKnowledge } from "../../db/invocation-knowledge.ts";
import type { TriggerEvent } from "../../db/invocations.ts";
import type { ConfigSnapshot, Pipeline } from "../../shared/config/types.ts";
import { type Diagnostic, diagnostic } from "../../shared/diagnostics.ts";
import type { Knowledge } from "../../shared/knowledge/service.ts";
import type { Logger } from "../../shared/logger.ts";
import type { Workspace } from "../../shared/workspace-layout.ts";
import type { CredentialCooldowns } from "../credentials/cooldowns.ts";
import type { CredentialSecrets } from "../credentials/secrets.ts";
import type { ResolvedEvent } from "../event/resolve.ts";
import type { ProcessEngine, RunEngines } from "../exec/engine.ts";
import type { ModelGateway } from "../gateway/gateway.ts";
import type { BudgetResume } from "./budget-periods.ts";
import type { RunKnowledge } from "./knowledge.ts";
import type { ReviewSplit } from "./path-groups.ts";
import type { RunSecrets } from "./run-secrets.ts";

/** What running an agent needs from the worker, for an invocation and an orchestrated task alike. */
export interface RunDeps {
  /** claims, finishes, releases and trigger settlement: synchronous commits */
  pool: pg.Pool;
  /**
   * The run's own records (tasks, artifacts, heartbeats, agent tokens): a pool whose sessions commit
   * asynchronously, so a record costs a round trip, not a WAL flush.
   */
  records: pg.Pool;
  config: Readonly<ConfigSnapshot>;
  cooldowns: CredentialCooldowns;
  secrets: CredentialSecrets;
  logger: Logger;
  workerId: string;
  /** the engine of every unsandboxed run: the worker's host, through its spawner */
  host: ProcessEngine;
  /** handed to agent processes as SVC_DAEMON_URL next to their SVC_AGENT_TOKEN */
  daemonUrl?: string;
  /** the knowledge opened at start-up: delivered into runs by the pipeline's `knowledge` block */
  knowledge?: Knowledge;
  /** every agent's model calls pass it (worker/gateway/): usage, budgets, credential states */
  gateway: ModelGateway;
  /** the worker's queue: a run that creates orchestrated tasks itself sends their lane jobs (review-split.ts) */
  boss?: PgBoss;
}

/** How a run ended, as the lifecycle records it. */
export type RunEnd =
  | { kind: "completed"; result: unknown }
  | { kind: "failed"; diagnostic: Diagnostic }
  /**
   * handed back to the queue: shutdown, or (`credentials`) no target usable right now, or
   * (`resume`) held by a spent period budget until it resets (budget-periods.ts BudgetResume)
   */
  | { kind: "released"; credentials?: boolean; resume?: BudgetResume }
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
  /** the pipeline's circuit breaker as the claim read it: the time it closes, null when closed */
  breakerOpenUntil: Date | null;
  /** the target the invocation row names already */
  target: string | null;
  /** the invocation's concurrency group (db/concurrency-groups.ts); null or absent: none */
  group?: string | null;
  /** what the run would publish is recorded as its artifact instead (worker/outputs/held.ts) */
  outputsHeld?: boolean;
  /** it runs its pipeline's shadow candidate: period budgets count it apart (budget-periods.ts) */
  shadow?: boolean;
  isCancelled: () => boolean;
  /**
   * a heartbeat now; false when the claim is lost (the run's lease failed, or another worker took
   * it): then the run stops and publishes nothing. When absent, the claim is taken as held.
   */
  stillHeld?: () => Promise<boolean>;
}

/** One run in progress: what every phase reads, and the next task's sequence number. */
export interface RunState {
  deps: RunDeps;
  input: RunInput;
  event: ResolvedEvent;
  /** where each phase's processes run, chosen once before the first (phases.ts) */
  engines: RunEngines;
  /** the values its stored artifacts are redacted of: the worker's, and what the run was given */
  secrets: RunSecrets;
  /** the environment of every setup step, and the base of the agent's */
  env: Record<string, string>;
  /** added to the setup steps' environment only: an App identity's read-only GH_TOKEN (setup-token.ts) */
  setupEnv?: Record<string, string>;
  /** what the pipeline's `knowledge` block delivers into this run (prompt section, files) */
  knowledge: RunKnowledge;
  /** PREVIOUS_SHA: the concurrency group's last reviewed head, if an ancestor of this one; else empty */
  previousSha: string;
  /** what retrieval delivered, until it is recorded on the invocation (see phases.ts) */
  knowledgeUnrecorded?: InvocationKnowledge;
  /** a large pull request's review split by path groups, one task each (review-split.ts) */
  split?: ReviewSplit;
  seq: number;
}
