import type { AgentCliTarget, Pipeline } from "../../../shared/config/types.ts";
import type { Prompt } from "../../run/prompt.ts";
import type { RunAccess } from "../../run/run-token.ts";
import type { TokenUsage } from "../outcome.ts";

/** Everything one CLI attempt is launched from. */
export interface CliContext {
  target: AgentCliTarget;
  /** `sandbox` decides whether the CLI is confined to the worktree by its own means (confinement.ts) */
  pipeline: Pick<Pipeline, "result" | "agentAccess" | "sandbox"> &
    Partial<Pick<Pipeline, "orchestrator" | "review" | "outputs">>;
  prompt: Prompt;
  /** the worktree: the CLI runs there, and on the host it may read nothing else */
  cwd: string;
  /** the configuration directory, which holds the worktree (shared/workspace-layout.ts) */
  configDir: string;
  /** the agent's own folder, made empty after the setup steps: the CLI's files go here, never into RUN_DIR */
  agentDir: string;
  /** the private HOME of this attempt (isolation.ts) */
  home: string;
  /** the run token and the daemon's tool endpoint; without an endpoint the CLI gets no svc tools */
  access: RunAccess;
  /** the run's environment: the pipeline's env manifest, the run variables, PATH */
  runEnv: Record<string, string>;
  /** the attempt's gateway token, exported as the CLI expects its API key: never the credential */
  key: string;
  /** the model API's base URL as the CLI is given it: the worker's gateway */
  baseUrl: string;
}

export interface CliLaunch {
  argv: string[];
  /** what the CLI adds to the run's environment: its credential and its switches */
  env: Record<string, string>;
  stdin: string;
}

/** What a CLI said about its run, read from its own output once it exited. */
export interface CliReport {
  /** the structured result, when the CLI produced one */
  result?: Record<string, unknown>;
  /** the CLI's final message, kept in the transcript when it is no valid result */
  finalText?: string;
  /** the model API's HTTP status when the CLI stopped on a refused request */
  apiStatus?: number;
  /** the model API said it was overloaded (Anthropic's 529 overloaded_error, OpenAI's 503) */
  overloaded?: boolean;
  /** the CLI stopped at its own turn limit */
  turnLimit?: boolean;
  /** the CLI's error text, when it failed */
  error?: string;
  /** the tokens the CLI reported using, when it reported any */
  usage?: TokenUsage;
  /** transcript lines: turns, tool calls, token usage */
  summary: string[];
}

/** One agent CLI as a runtime: how it is started, and how its output is read. */
export interface AgentCli {
  /** the default executable on PATH */
  command: string;
  launch(context: CliContext): Promise<CliLaunch>;
  report(stdout: string, context: CliContext): Promise<CliReport>;
}

/** The JSON objects of a JSON-lines stream; other lines (a CLI's warnings) are skipped. */
export function jsonLines(stdout: string): Record<string, unknown>[] {
  const events: Record<string, unknown>[] = [];
  for (const line of stdout.split("\n")) {
    if (!line.startsWith("{")) continue;
    try {
      events.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      // a line cut short by a kill, or not JSON after all: the transcript still has it
    }
  }
  return events;
}

/** `tool ×2, other` from the names of the calls, in first-call order. */
export function countCalls(names: string[]): string {
  const counts = new Map<string, number>();
  for (const name of names) counts.set(name, (counts.get(name) ?? 0) + 1);
  return [...counts].map(([name, count]) => (count > 1 ? `${name} ×${count}` : name)).join(", ") || "none";
}
