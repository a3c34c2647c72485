import type { TokenUsage } from "../../db/tasks.ts";
import type { Diagnostic } from "../../shared/diagnostics.ts";

export type { TokenUsage };

/** How one target's attempt at running the agent ended. */
export type AgentOutcome = (
  | { kind: "result"; result: Record<string, unknown> }
  /** ends the invocation: no failover (a timeout, an agent that failed or answered no JSON) */
  | { kind: "failed"; diagnostic: Diagnostic }
  /** the target cannot run now (no usable credential, or its service failed): try the next target */
  | { kind: "unavailable"; reason: string; diagnostic?: Diagnostic }
  /** the worker is shutting down and took the run back */
  | { kind: "aborted" }
) & {
  /** set by runtimes that learn their usage (openai, claude-code, codex); absent for `command` */
  usage?: TokenUsage;
};
