import { clearBudgetWait, markBudgetWait } from "../../db/budget-periods.ts";
import type { ResolvedEvent } from "../event/resolve.ts";
import { isOwnEvent } from "../outputs/own-events.ts";
import { noteBudgetWait } from "../outputs/progress.ts";
import { type BudgetResume, budgetDecision, budgetResume, onOverBudgetTargets } from "./budget-periods.ts";
import { type BreakerDeps, breakerHold, type GatedRun } from "./circuit-breaker.ts";
import { type ReplyThread, replyThread } from "./thread.ts";
import type { RunInput } from "./types.ts";

/**
 * Asked before a run does anything: `wait` when the pipeline's circuit breaker was open at the
 * run's claim (the run goes back to the queue), `{ resume }` when a period budget of daemon.yaml's
 * `budgets` is spent (it goes back due at the period's reset); `own_event` when the event was
 * authored by the pipeline's own identity, `foreign_thread` when it is a reply in a review thread
 * svc did not open (thread.ts): the run completes without an agent. Else the run goes ahead, with the thread of the reply it answers. A spent budget with
 * `{ target, when: over_budget }` targets puts the run on those instead: `run.pipeline` is replaced
 * for this attempt.
 */
export async function runGate(
  deps: BreakerDeps,
  run: GatedRun & Pick<RunInput, "workload" | "outputsHeld" | "shadow">,
  event: ResolvedEvent,
): Promise<"wait" | "own_event" | "foreign_thread" | { resume: BudgetResume } | { thread?: ReplyThread }> {
  const fields = { pipeline: run.pipeline.name, invocation: run.invocationId };
  if (isOwnEvent(deps.config, run.pipeline, event)) {
    deps.logger.info("event authored by the pipeline's own identity: not answered", {
      event: "invocation.own_event",
      ...fields,
    });
    return "own_event";
  }
  // read before the breaker and the budget: a reply svc will not answer need not wait for them
  const thread = await replyThread(deps, run.pipeline, event);
  if (thread === "foreign") {
    deps.logger.info("a reply in a review thread svc did not open: not answered", {
      event: "invocation.foreign_thread",
      ...fields,
    });
    return "foreign_thread";
  }
  if (breakerHold(deps, run)) return "wait";
  const resume = await budgetHold(deps, run, event);
  if (resume) return { resume };
  return thread ? { thread } : {};
}

/**
 * Whether a spent period budget holds the run, and then when and how it goes back to its lane; on
 * over_budget targets it goes ahead there.
 */
async function budgetHold(
  deps: BreakerDeps,
  run: GatedRun & Pick<RunInput, "workload" | "outputsHeld" | "shadow">,
  event: ResolvedEvent,
): Promise<BudgetResume | false> {
  const { budgets } = deps.config;
  if (!budgets || run.pipeline.targets.length === 0) return false;
  const decision = await budgetDecision(deps.pool, budgets, run);
  // the trigger is the live run's too: a shadow's wait is its own log line, never the trigger's diagnostic
  const triggerId = run.shadow ? null : run.workload.trigger_id;
  const fields = { pipeline: run.pipeline.name, invocation: run.invocationId };
  if (decision.kind !== "wait") {
    // a run that waited before goes ahead now: its trigger no longer says it waits
    if (triggerId) await clearBudgetWait(deps.pool, triggerId);
    if (decision.kind === "fallback") {
      deps.logger.info("period budget spent: the run goes on its over_budget targets", {
        event: "budget.over_budget",
        ...fields,
        targets: decision.targets,
        message: decision.diagnostic.message,
      });
      run.pipeline = onOverBudgetTargets(run.pipeline, decision.targets);
    }
    return false;
  }
  const resume = budgetResume(budgets, decision, event.context);
  deps.logger.info("period budget spent: the invocation waits", {
    event: "budget.waiting",
    ...fields,
    until: decision.until.toISOString(),
    resume_after_s: resume.afterSeconds,
    priority: resume.priority,
    message: decision.diagnostic.message,
  });
  // the trigger shows the wait (`svc trigger list`); the sticky comment once per wait, not per recheck
  const first = triggerId ? await markBudgetWait(deps.pool, triggerId, decision.diagnostic) : true;
  // a run whose outputs are held back writes nothing to the pull request, its wait included
  if (first && !run.outputsHeld)
    await noteBudgetWait(
      deps,
      { ...run, triggerId, event },
      { until: decision.until, diagnostic: decision.diagnostic },
    );
  return resume;
}
