/**
 * Every diagnostic code svc emits. Records carry `{ code, message }`; operators
 * filter on codes (`svc trigger list --code`), so codes are stable API.
 */
export const DIAGNOSTIC_CODES = {
  agent_timeout: "the agent run exceeded its target's timeout",
  agent_turn_limit:
    "the openai agent loop reached targets.<name>.max_turns model calls without a final message",
  unknown_agent_reference: "the event or fire request names an agent or skill the configuration lacks",
  unknown_policy_reference: "a policies: entry names no file in policies/",
  /** @deprecated kept so old records and filters still resolve; new records use unknown_policy_reference */
  unknown_protocol_reference: "deprecated spelling of unknown_policy_reference",
  no_matching_pipeline: "the trigger fired no pipeline",
  paused: "the pull request is paused by a comment command: no automatic run (or the pause command itself)",
  resumed: "a resume comment command restarted the pull request's automatic runs",
  command_not_allowed: "a comment command by an author outside codehost.commands_from: no run",
  budget_wait:
    "a period budget (daemon.yaml budgets.org or budgets.repos) is spent: the run waits for the period's reset",
  filtered:
    "the pull request matched no trigger filter of the pipelines it fired (branches, paths, labels, drafts): no run",
  author_not_allowed:
    "the event's author may not start the pipelines it matched (authors, or an outsider's or fork's pull request and an unsandboxed pipeline)",
  setup_failed: "a setup step exited non-zero",
  result_invalid: "the agent's result does not match result.schema",
  worker_lost: "the worker running the invocation stopped before it finished",
  credential_dead: "every credential of the target is dead",
  target_unavailable: "no target of the pipeline is usable",
  agent_failed: "the agent process failed",
  output_failed: "publishing an output failed",
  cancelled: "the invocation was cancelled",
  superseded:
    "a newer event of the pipeline's concurrency group took the invocation's place; it was cancelled (status cancelled)",
  budget_exceeded:
    "the invocation spent its pipeline's budget (tokens, cost or requests); the worker's gateway refused the next model request and stopped the agent",
  sandbox_image_missing:
    "the pipeline's sandbox image is not on the container engine (run `svc image pull`), or making its variant failed",
  sandbox_engine_unreachable:
    "the container engine at sandboxes.engine.socket (or DOCKER_HOST) did not answer",
  sandbox_start_failed: "the container engine refused to create or start the run's sandbox container",
} as const;

export type DiagnosticCode = keyof typeof DIAGNOSTIC_CODES;

export interface Diagnostic {
  code: DiagnosticCode | string;
  message: string;
  target?: string;
  path?: string;
  field?: string;
  metadata?: Record<string, unknown>;
  details?: Diagnostic[];
}

export function diagnostic(
  code: DiagnosticCode,
  message: string,
  extra: Omit<Diagnostic, "code" | "message"> = {},
): Diagnostic {
  return { code, message, ...extra };
}
