import type { PathRule } from "../review/path-rules.ts";
import type { HostTool } from "./host-tool-types.ts";
import type { PipelineSandbox, SandboxSettings } from "./sandbox-types.ts";
import type { SecretSource } from "./secret-source.ts";
/**
 * The frozen configuration snapshot a process reads once at start-up.
 * Produced by `loadConfig` (shared/config/load.ts); consumed by cli, ingress and worker.
 * Secrets written `${ENV}` are already substituted; `secret_ref` values are resolved later
 * (they need the database and the instance key), so they stay references here.
 */

export type VerifyKind = "bearer" | "codehost" | "tracker" | "gitlab";

export interface WebhookSource {
  name: string;
  verify: VerifyKind;
  secret: SecretSource;
  /**
   * `verify: gitlab` only: GitLab's signing token (`whsec_<base64 key>`). When set, a delivery must
   * also carry a valid Standard Webhooks signature, besides the secret token in `X-Gitlab-Token`.
   */
  signingSecret?: SecretSource;
  /**
   * `trusted_senders` (bearer and tracker sources only): whoever sends to it is of the team, so the
   * notes its runs submit are trusted. Absent: untrusted, as such a payload names no author svc can judge.
   */
  trustedSenders?: boolean;
}

export interface TargetCredential {
  name: string;
  secret: SecretSource;
  /** `command` targets: the variable the agent process reads this credential from */
  env?: string;
}

export interface CommandTarget {
  name: string;
  runtime: "command";
  /** argv, run without a shell in the worktree; instructions on stdin. */
  command: string[];
  timeoutMs: number;
  model?: string;
  credentials: TargetCredential[];
  /** the agent's exit that says its credential was refused: it is then marked dead */
  authFailure?: { exitCodes: number[]; stderr?: string };
}

/** `targets.<name>.price`: USD per million tokens, what `budget.cost` is counted in. */
export interface TargetPrice {
  input: number;
  output: number;
  /** prompt tokens read from the provider's cache; absent: priced as `input` */
  cacheRead?: number;
}

/** `budget:` of a pipeline: the most one invocation may spend on model calls (worker/gateway/). */
export interface Budget {
  /** input + output tokens, cached input included */
  tokens?: number;
  /** USD, from the targets' `price` */
  cost?: number;
  /** model requests */
  requests?: number;
}

/** A pipeline's `budget`, and what its runs do once a period budget of daemon.yaml's `budgets` is spent. */
export interface PipelineBudget extends Budget {
  /**
   * `targets` entries `{ target, when: over_budget }`: what a run runs on, in order, instead of its
   * targets while a period budget is spent (worker/run/budget-periods.ts); absent: the run waits
   */
  overBudget?: string[];
}

/** `budgets.org` / `budgets.repos` of daemon.yaml: at most `cost` USD per calendar day or month, in UTC. */
export interface BudgetPeriod {
  per: "day" | "month";
  cost: number;
}

/** `budgets:` of daemon.yaml: the spend of every run together (`org`), and of each repository's (`repos`). */
export interface BudgetPeriods {
  org?: BudgetPeriod;
  repos?: BudgetPeriod;
  /** `members_first`: at a reset, the held runs of the repository's team go before the rest's */
  membersFirst?: boolean;
}

export interface OpenAiTarget {
  name: string;
  runtime: "openai";
  baseUrl: string;
  model: string;
  timeoutMs: number;
  credentials: TargetCredential[];
  price?: TargetPrice;
  /** model calls one agent loop may make (default 20); beyond it the run fails `agent_turn_limit` */
  maxTurns?: number;
}

/** What an agent CLI's built-in tools may do in the worktree (`agent_access` of a pipeline). */
export type AgentAccess = "read" | "edit";

/**
 * `claude-code` and `codex`: a coding agent CLI run headless in the worktree, with a private HOME,
 * svc's tools over MCP and its credential exported as the CLI expects (see worker/runtimes/agent-cli/).
 */
export interface AgentCliTarget {
  name: string;
  runtime: "claude-code" | "codex";
  model: string;
  /** a gateway or proxy in front of the model API; absent: the CLI's own default */
  baseUrl?: string;
  /** the CLI's executable; absent: `claude` or `codex` on PATH */
  bin?: string;
  /** the whole CLI run, from spawn to exit */
  timeoutMs: number;
  /** the CLI's own turn limit (Claude Code's --max-turns); absent: the CLI's default */
  maxTurns?: number;
  credentials: TargetCredential[];
  price?: TargetPrice;
}

export type Target = CommandTarget | OpenAiTarget | AgentCliTarget;

/** `trigger.codehost` / `trigger.tracker` entries: an event name, optionally narrowed to repos. */
export interface EventMatcher {
  events: string[];
  repos: string[];
  /** `{ command: <word> }`: fires on a pull request comment `@<bot> <word> ...` (worker/event/command.ts) */
  command?: string;
  /** `{ replies: true }`: fires on a reply in one of svc's own review threads (worker/event/reply.ts) */
  replies?: true;
  /** `branches`, `paths`, `labels`, `drafts` of a `{ events }` entry of pull request events (worker/event/filters.ts) */
  filters?: PullRequestFilters;
}

/**
 * The filters of a `trigger.codehost` entry, in GitHub Actions' shape: glob lists judged in order,
 * the last pattern matching deciding (`!` excludes); absent keys filter nothing.
 */
export interface PullRequestFilters {
  /** globs over the pull request's base branch: it fires only on a base one matches */
  branches?: string[];
  /** globs over the base branch: it does not fire on a base one matches */
  branchesIgnore?: string[];
  /** globs over the changed files (read from GitHub at dispatch): it fires when one file matches */
  paths?: string[];
  /** globs over the changed files: it does not fire when every file matches */
  pathsIgnore?: string[];
  /** it fires on `labeled` with one of them, and on other actions while the pull request carries one */
  labels?: string[];
  /** true: a draft's events fire it too; absent or false, a draft waits for `ready_for_review` */
  drafts?: boolean;
}

/** GitHub's `author_association`, lower-cased; GitLab's access levels are mapped onto it. */
export const AUTHOR_ASSOCIATIONS = [
  "owner",
  "member",
  "collaborator",
  "contributor",
  "first_time_contributor",
  "none",
] as const;
export type AuthorAssociation = (typeof AUTHOR_ASSOCIATIONS)[number];

export interface PipelineTrigger {
  webhook: string[];
  codehost: EventMatcher[];
  tracker: EventMatcher[];
  /** `trigger.schedule` entries (shared/config/schedule.ts); absent means none */
  schedule?: Schedule[];
}

/** One `trigger.schedule` entry, named `<pipeline>`, then `<pipeline>-2`, `-3` … */
export interface Schedule {
  name: string;
  pipeline: string;
  /** 5-field cron expression */
  cron: string;
  /** IANA time zone, default UTC */
  timezone: string;
  args: Record<string, string | number | boolean>;
  /** after a time with no worker running, fire the most recent missed tick */
  catchUp: boolean;
}

export interface PipelineArg {
  type: "string" | "number" | "boolean";
  required: boolean;
}

export interface OutputBinding {
  handler: string;
  config?: { bot: string; channel: string };
  /** codehost.comment / codehost.review: one comment per pull request, edited on every run */
  sticky?: boolean;
  /** the sticky comment says the run is in progress from its start, and how it ended */
  progress?: boolean;
  /** codehost.review: resolve svc's own review threads whose lines changed */
  resolveOutdated?: boolean;
  /**
   * codehost.comment: `any` lets the result name another issue or pull request to post on (never
   * for an outsider's run); absent: only the event's own
   */
  target?: "any";
}

export interface Pipeline {
  name: string;
  /** relative to the config dir, e.g. `pipelines/pr-review.yaml` */
  file: string;
  version: string;
  agent?: string;
  skill?: string;
  companions: string[];
  instructions: string;
  /** null when the pipeline runs only on demand */
  trigger: PipelineTrigger | null;
  args: Record<string, PipelineArg>;
  principals: Record<string, string>;
  principal?: string;
  result?: { schema: Record<string, unknown> };
  outputs: Record<string, OutputBinding>;
  env: Record<string, string>;
  setup: { run: string }[];
  retainCheckout: boolean;
  /** `checkout:`: how much of the repository a run's worktree holds (worker/checkout/) */
  checkout: CheckoutSettings;
  targets: string[];
  orchestrator?: Orchestrator;
  knowledge: { method: "bm25" | "hybrid" | "none"; delivery?: "prompt" | "file" | "search" | "browse" };
  /** run the setup steps and the agent in a container (shared/config/sandboxes.ts) */
  sandbox?: PipelineSandbox;
  /** host tools the run's token may call (`host:execute:<name>`) */
  tools?: string[];
  /** what an agent CLI's built-in tools may do (default `read`); svc's own tools are always allowed */
  agentAccess?: AgentAccess;
  /** `authors`: who may start it; absent: outsiders start it only when it is sandboxed (worker/event/gates.ts) */
  authors?: AuthorAssociation[];
  /** the most one invocation may spend on model calls, enforced by the worker's gateway */
  budget?: PipelineBudget;
  /** `concurrency:`: runs of one group never run at once (docs/worker.md, "Concurrency groups") */
  concurrency?: Concurrency;
  /** `review:`: large pull requests and rules per path (docs/worker.md, "Large pull requests") */
  review?: ReviewSettings;
  /** `shadow:`: a candidate version run beside this one, its outputs held back (docs/evals.md, "Shadow versions") */
  shadow?: ShadowVersion;
  /** `record_answers:`: the gateway records its live runs' model answers (docs/evals.md, "Replayed model answers") */
  recordAnswers?: boolean;
}

/** `shadow:` of a pipeline, with its candidate resolved from `version_file` (shared/config/load.ts). */
export interface ShadowVersion {
  /** `pipelines/<file>.yaml`: the candidate, not a pipeline of its own */
  versionFile: string;
  /** the share of the live pipeline's events the candidate also runs on, (0, 1] */
  share: number;
  /** the candidate, named like the live pipeline, with its own version; absent while the file is broken */
  candidate?: Pipeline;
}

/** `review:` of a pipeline. */
export interface ReviewSettings {
  /** `max_changed_lines`: above it (additions + deletions) the agent is not started, unless asked with `--force` */
  maxChangedLines?: number;
  /** `paths`: instructions for, or findings dropped on, the paths a glob matches */
  paths: PathRule[];
}

/** `checkout:` of a pipeline (docs/worker.md, "Checkouts"). */
export interface CheckoutSettings {
  /**
   * commits of the head's history the worktree holds at least; `full`: the whole history; absent:
   * what a review needs (the head, and for a pull request its base and their merge base)
   */
  depth?: number | "full";
  /** `submodules`: none, the first level, or every level, fetched as the run's identity */
  submodules: false | true | "recursive";
  /** `lfs`: Git LFS files fetched as the run's identity (needs git-lfs on the worker's host) */
  lfs: boolean;
  /** `paths`: a sparse checkout of these directories (cone mode); empty: the whole tree */
  paths: string[];
}

/** `concurrency:` of a pipeline. */
export interface Concurrency {
  /** what one group holds: a pull request (or issue) of a repository, a repository, or the whole pipeline */
  group: "pull_request" | "repository" | "pipeline";
  /** `cancel_in_progress`: a newer event cancels the group's running invocation instead of waiting for it */
  cancelInProgress: boolean;
}

/** `orchestrator:` of a pipeline: the run splits its work into tasks (docs/worker.md). */
export interface Orchestrator {
  strategy: { type: "auto" };
  guidance?: string;
  /** where the orchestrator runs; empty: the pipeline's `targets` */
  targets: string[];
  /** `max_tasks`: tasks one run may create (default 8) */
  maxTasks: number;
  /** `max_parallel`: tasks of one run running at once (default 2) */
  maxParallel: number;
  /** `task_timeout`: the most one task may take; unset: its target's timeout */
  taskTimeoutMs?: number;
  /** `timeout`: the most the orchestrator itself may take; unset: its target's timeout */
  timeoutMs?: number;
}

export interface Policy {
  name: string;
  description: string;
  body: string;
  file: string;
}

export interface Agent {
  name: string;
  description: string;
  policies: string[];
  /** PERSONA.md body without frontmatter */
  persona: string;
  file: string;
}

export interface Skill {
  name: string;
  description: string;
  version: string;
  policies: string[];
  /** principal binding the skill requires, if any */
  principal?: string;
  body: string;
  file: string;
}

export interface Member {
  name: string;
  kind: "agent" | "human";
  identities: { codehost?: { handle: string }; chat?: { id: string } };
}

export interface ApiTokenConfig {
  name: string;
  scopes: string[];
  secret: SecretSource;
}

export interface BrokerConfig {
  /** issuer expected in `iss`, when set */
  issuer?: string;
  audience?: string;
  /** PEM/JWK public key or shared secret, or a JWKS URL */
  jwksUrl?: string;
  publicKey?: string;
  secret?: SecretSource;
}

export interface MetricsSettings {
  token: SecretSource;
}

/** `codehost.app` / `codehost.principals.<id>.app`: a GitHub App acting through installation tokens. */
export interface CodehostApp {
  /** the App's numeric id (the JWT's issuer) */
  id: number;
  /** the App's PEM private key */
  privateKey: SecretSource;
}

/** One identity: a long-lived token, or a GitHub App. Exactly one of the two. */
export type CodehostCredential =
  | { token: SecretSource; app?: undefined }
  | { app: CodehostApp; token?: undefined };

/** `codehost` in daemon.yaml: the API outputs are posted to and the identities posting. */
export interface CodehostConfig {
  /** `codehost.kind`: absent for GitHub (the default), `gitlab` for GitLab's REST API v4 */
  kind?: "gitlab";
  apiUrl: string;
  /** the default identity, used when a pipeline binds no code-host principal */
  token?: SecretSource;
  /** the default identity as a GitHub App; exclusive with `token` */
  app?: CodehostApp;
  /** `codehost.principals.<id>`, referenced by pipelines as `codehost.principal.<id>` */
  principals: Record<string, CodehostCredential>;
  /** `codehost.bot_name`: the name comment commands address (`@<bot_name> <word>`); see botName */
  botName?: string;
  /** `codehost.commands_from`: author associations whose comment commands are taken */
  commandsFrom?: AuthorAssociation[];
}

/** `log:` in daemon.yaml: winston's file transport beside stdout. */
export interface LogSettings {
  /** absolute; each process inserts its role before the extension */
  file: string;
  maxSizeBytes: number;
  maxFiles: number;
}

export interface ConfigSnapshot {
  /** absolute path of the configuration directory */
  dir: string;
  server: {
    host: string;
    port: number;
    /** peers whose forwarding headers are believed for the client address (addresses or CIDR ranges) */
    trustedProxies?: readonly string[];
    /**
     * `server.loopback_star`: whether a local program on loopback acts with `*` without a token
     * (shared/loopback-client.ts); absent means true. False for installs behind a same-host TCP proxy.
     */
    loopbackStar?: boolean;
    /** the daemon's address as people reach it (links in posted comments), no trailing slash */
    publicUrl?: string;
  };
  webhooks: { maxBodyBytes: number; sources: Record<string, WebhookSource> };
  targets: Record<string, Target>;
  ask: { targets: string[] };
  knowledge: {
    retrieval: {
      /** `local` (qmd) or `vector` (Chroma plus the host embedder runner) */
      engine: string;
      topK?: number;
      minScore?: number;
      rewrite: { targets: string[] };
      /** absolute path of another qmd executable; default: the one installed with svc */
      bin?: string;
      /** the Chroma server of the vector engine */
      url?: string;
      /** the host embedder runner: an executable on the PATH, JSON lines in and out */
      embedder?: string;
    };
    /**
     * `knowledge.outsiders`: the folder of the knowledge base (relative to `knowledge/`, no trailing
     * slash) whose documents an outsider's run may read; absent (`none`): it reads no document
     */
    outsiders?: string;
  };
  /**
   * `repos.<owner>/<name>`: the repositories runs check out. `cloneUrl` is resolved at load: the
   * configured `clone_url`, else `<origin of codehost.api_url>/<owner>/<name>.git` (github.com for
   * api.github.com); `configured` says which. `auth: none`: fetched anonymously
   */
  repos: Record<string, { cloneUrl: string; configured: boolean; auth?: "none" }>;
  /** the code host outputs are posted to; absent when daemon.yaml has no `codehost` */
  codehost?: CodehostConfig;
  channels: { chat: { apiUrl?: string; bots: Record<string, { token: SecretSource }> } };
  /** `budgets:` (shared/config/daemon/budgets.ts); absent: no period budget, runs never wait for one */
  budgets?: BudgetPeriods;
  queue: {
    circuitBreaker?: {
      failures?: number;
      cooldownMs?: number;
      escalate?: { chat?: { bot: string; channel: string } };
    };
  };
  hostTools: Record<string, HostTool>;
  auth: { tokens: Record<string, ApiTokenConfig>; broker?: BrokerConfig } | null;
  worker: {
    concurrency: number;
    graceMs: number;
    metricsPort?: number;
    /** `worker.heartbeat`: a held run renews its lease this often (the loader always sets it) */
    heartbeatMs?: number;
  };
  /** `metrics:` (shared/config/metrics.ts); absent = `/metrics` needs `admin` */
  metrics?: MetricsSettings;
  /** `log:` (shared/config/log.ts); absent = stdout only */
  log?: LogSettings;
  workspaces: {
    checkoutRetentionDays: number;
    transcriptRetentionDays: number;
    /** `workspaces.repo_cache`: the worker host's repository mirrors (worker/checkout/cache.ts) */
    repoCache: { maxSizeBytes: number };
  };
  /** `sandboxes:` (shared/config/sandboxes.ts); absent in snapshots built by hand, which then use the defaults */
  sandboxes?: SandboxSettings;
  pipelines: Record<string, Pipeline>;
  agents: Record<string, Agent>;
  skills: Record<string, Skill>;
  policies: Record<string, Policy>;
  members: Member[];
}

/** The part of the snapshot `daemon.yaml` defines. */
export type DaemonSettings = Omit<
  ConfigSnapshot,
  "dir" | "pipelines" | "agents" | "skills" | "policies" | "members"
>;

export type Severity = "error" | "warning";

/** One configuration problem. The loader returns all of them, never only the first. */
export interface ConfigProblem {
  /** relative to the config dir, e.g. `pipelines/pr-review.yaml` */
  file: string;
  line?: number;
  column?: number;
  /** dotted key path, e.g. `webhooks.sources.github.secret_ref` */
  path: string;
  code: string;
  severity: Severity;
  message: string;
}

export type LoadResult =
  | { ok: true; config: Readonly<ConfigSnapshot>; problems: ConfigProblem[] }
  | { ok: false; problems: ConfigProblem[] };
