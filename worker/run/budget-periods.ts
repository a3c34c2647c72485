import { repoOfRun, spendSince } from "../../db/budget-periods.ts";
import type { Queryable } from "../../db/queryable.ts";
import type { BudgetPeriod, BudgetPeriods, Pipeline } from "../../shared/config/types.ts";
import type { Diagnostic } from "../../shared/diagnostics.ts";
import type { EventContext } from "../event/context.ts";

/**
 * `budgets` of daemon.yaml: before a run starts, what every run together (`org`) and the run's
 * repository (`repos`) spent in the current calendar day or month, UTC, against its `cost`. Spent:
 * the run goes back to its lane with its job due at the period's reset (output-gate.ts, BudgetResume),
 * or runs on its pipeline's `{ target, when: over_budget }` targets when it lists some. Shadow runs
 * (a pipeline's candidate version) are counted apart: their spend never holds a live run, and they
 * are held by the same bounds over the shadow runs' own spend.
 */

/**
 * The clock the periods are read by. A field, not `Date.now` inline, so a test moves it past a
 * reset instead of waiting for midnight (test/e2e/worker/budget-clock.ts replaces `now`).
 */
export const budgetClock = { now: (): Date => new Date() };

/** The start of the calendar day or month `now` is in, UTC. */
export function periodStart(per: BudgetPeriod["per"], now: Date): Date {
  const y = now.getUTCFullYear();
  const m = now.getUTCMonth();
  return per === "day" ? new Date(Date.UTC(y, m, now.getUTCDate())) : new Date(Date.UTC(y, m, 1));
}

/** When the period `now` is in resets: the next midnight UTC, or the first of next month. */
export function periodReset(per: BudgetPeriod["per"], now: Date): Date {
  const y = now.getUTCFullYear();
  const m = now.getUTCMonth();
  return per === "day" ? new Date(Date.UTC(y, m, now.getUTCDate() + 1)) : new Date(Date.UTC(y, m + 1, 1));
}

export type BudgetDecision =
  | { kind: "go" }
  /**
   * every spent period's reset is past `until`, `afterSeconds` from the budget clock's now (at
   * least 1, rounded up: the job is never due before the reset); `diagnostic` is the `budget_wait` it shows
   */
  | { kind: "wait"; until: Date; afterSeconds: number; diagnostic: Diagnostic }
  | { kind: "fallback"; targets: string[]; diagnostic: Diagnostic };

interface Spent {
  scope: "org" | "repos";
  period: BudgetPeriod;
  spent: number;
}

/** Which periods of `budgets` the run's start finds spent, and what the run does then. */
export async function budgetDecision(
  db: Queryable,
  budgets: BudgetPeriods | undefined,
  run: { invocationId: string; pipeline: Pipeline; shadow?: boolean },
  now: Date = budgetClock.now(),
): Promise<BudgetDecision> {
  if (!budgets || (!budgets.org && !budgets.repos)) return { kind: "go" };
  const repo = budgets.repos ? await repoOfRun(db, run.invocationId) : null;
  const spent: Spent[] = [];
  // one read per distinct period start: both scopes of `per: day` share it
  const reads = new Map<number, Promise<{ org: number; repo: number }>>();
  const spendIn = (period: BudgetPeriod) => {
    const since = periodStart(period.per, now);
    let read = reads.get(since.getTime());
    if (!read) {
      read = spendSince(db, since, repo, run.shadow === true);
      reads.set(since.getTime(), read);
    }
    return read;
  };
  if (budgets.org) {
    const { org } = await spendIn(budgets.org);
    if (org >= budgets.org.cost) spent.push({ scope: "org", period: budgets.org, spent: org });
  }
  // a run whose trigger names no repository counts towards the organisation's budget alone
  if (budgets.repos && repo !== null) {
    const { repo: ofRepo } = await spendIn(budgets.repos);
    if (ofRepo >= budgets.repos.cost) spent.push({ scope: "repos", period: budgets.repos, spent: ofRepo });
  }
  if (spent.length === 0) return { kind: "go" };
  const fallback = run.pipeline.budget?.overBudget ?? [];
  const what = spent.map((s) => describe(s, repo, run.shadow === true)).join(" and ");
  if (fallback.length > 0)
    return {
      kind: "fallback",
      targets: fallback,
      diagnostic: {
        code: "budget_wait",
        message: `${what}: the run goes on its over_budget targets ${fallback.join(", ")} instead`,
      },
    };
  // the run can start once every spent period has reset: the latest reset of them
  const until = new Date(Math.max(...spent.map((s) => periodReset(s.period.per, now).getTime())));
  return {
    kind: "wait",
    until,
    afterSeconds: Math.max(1, Math.ceil((until.getTime() - now.getTime()) / 1000)),
    diagnostic: {
      code: "budget_wait",
      message: `${what}: the run waits in the queue until ${until.toISOString()}, when the period resets - raise budgets.${spent[0]!.scope}.cost in daemon.yaml, or list a cheaper { target, when: over_budget } in ${run.pipeline.file}, not to wait`,
      metadata: { until: until.toISOString(), scopes: spent.map((s) => s.scope) },
    },
  };
}

function describe(s: Spent, repo: string | null, shadow: boolean): string {
  const whose = s.scope === "org" ? "every run together" : `repository ${repo}`;
  return `${shadow ? "the shadow runs of " : ""}${whose} spent $${s.spent.toFixed(2)} this ${s.period.per} (UTC) of budgets.${s.scope}.cost $${s.period.cost}`;
}

/** The pipeline as the run sees it on its over_budget targets: they replace its own, orchestrator's included. */
export function onOverBudgetTargets(pipeline: Pipeline, targets: string[]): Pipeline {
  const { orchestrator } = pipeline;
  return {
    ...pipeline,
    targets,
    ...(orchestrator?.targets?.length ? { orchestrator: { ...orchestrator, targets } } : {}),
  };
}

/**
 * How a held run goes back to its lane: its job due `afterSeconds` from now, when the period resets
 * (pg-boss `startAfter`: nothing offers it again before), with `priority` 1 for a run of the
 * repository's team when `budgets.members_first` is set, so that at the reset, when every held job
 * falls due together, pg-boss hands out the team's first (its fetch orders by priority, then age).
 */
export interface BudgetResume {
  afterSeconds: number;
  priority: number;
}

/** Of the team: the event is not an outsider's (an owner, member or collaborator, not a fork: worker/event/authors.ts). */
export const MEMBERS_FIRST_PRIORITY = 1;

export function budgetResume(
  budgets: BudgetPeriods,
  decision: { afterSeconds: number },
  context: Pick<EventContext, "outsider">,
): BudgetResume {
  const first = budgets.membersFirst === true && !context.outsider;
  return { afterSeconds: decision.afterSeconds, priority: first ? MEMBERS_FIRST_PRIORITY : 0 };
}
