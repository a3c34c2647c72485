import type { Target } from "../../shared/config/types.ts";
import { type Diagnostic, diagnostic } from "../../shared/diagnostics.ts";
import { targetUsable } from "../queue/lanes.ts";
import type { RunDeps } from "./types.ts";

/** An attempt on one target that could not run the agent there (no usable credential left, a refusal). */
export interface Unavailable {
  kind: "unavailable";
  diagnostic?: Diagnostic;
}

/** Every target was tried: `failure` is null when none had a usable credential at all (the run waits). */
export interface Exhausted {
  kind: "exhausted";
  failure: Diagnostic | null;
}

/**
 * The agent on each target in order, for an invocation and an orchestrated task alike: a target
 * whose credentials are all cooling or dead is skipped, an attempt that ends `unavailable` hands over
 * to the next target, any other end is the answer. When every target was unavailable, the failure
 * is `target_unavailable` with each target's reason; when none was usable at all nothing failed,
 * and the caller waits for a probe or a restart to bring a credential back.
 */
export async function onTargets<T>(
  deps: Pick<RunDeps, "config" | "cooldowns" | "secrets">,
  names: readonly string[],
  attempt: (target: Target) => Promise<T | Unavailable>,
  what: string,
): Promise<T | Exhausted> {
  const unavailable: Diagnostic[] = [];
  for (const name of names) {
    const target = deps.config.targets[name];
    if (!target || !targetUsable(target, deps.cooldowns, deps.secrets)) continue;
    const end = await attempt(target);
    if (!isUnavailable(end)) return end;
    if (end.diagnostic) unavailable.push(end.diagnostic);
  }
  if (unavailable.length === 0) return { kind: "exhausted", failure: null };
  const failure = diagnostic("target_unavailable", `no target of ${what}`, { details: unavailable });
  return { kind: "exhausted", failure };
}

function isUnavailable(end: unknown): end is Unavailable {
  return (end as { kind?: string }).kind === "unavailable";
}

/** An agent stopped by its deadline: `agent_timeout` on its target, with the bound it exceeded. */
export function agentTimeout(message: string, target: string, timeoutMs: number): Diagnostic {
  return diagnostic("agent_timeout", message, { target, metadata: { timeoutMs } });
}
