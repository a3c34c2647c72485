import { repoOfRun, spendSince } from "../../db/budget-periods.ts";
import type { Queryable } from "../../db/queryable.ts";
import type { BudgetPeriod, BudgetPeriods, Pipeline } from "../../shared/config/types.ts";
import type { Diagnostic } from "../../shared/diagnostics.ts";

/**
 * `budgets` of daemon.yaml: before a run starts, what every run together (`org`) and the run's
 * repository (`repos`) spent in the current calendar day or month, UTC, against its `cost`. Spent:
 * the run waits in its lane's queue until the period resets (output-gate.ts), or runs on its
 * pipeline's `{ target, when: over_budget }` targets when it lists some.
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
  /** every spent period's reset is past `until`; `diagnostic` is the `budget_wait` it shows */
  | { kind: "wait"; until: Date; diagnostic: Diagnostic }
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
  run: { invocationId: string; pipeline: Pipeline },
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
      read = spendSince(db, since, repo);
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
  const what = spent.map((s) => describe(s, repo)).join(" and ");
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
    diagnostic: {
      code: "budget_wait",
      message: `${what}: the run waits in the queue until ${until.toISOString()}, when the period resets - raise budgets.${spent[0]!.scope}.cost in daemon.yaml, or list a cheaper { target, when: over_budget } in ${run.pipeline.file}, not to wait`,
      metadata: { until: until.toISOString(), scopes: spent.map((s) => s.scope) },
    },
  };
}

function describe(s: Spent, repo: string | null): string {
  const whose = s.scope === "org" ? "every run together" : `repository ${repo}`;
  return `${whose} spent $${s.spent.toFixed(2)} this ${s.period.per} (UTC) of budgets.${s.scope}.cost $${s.period.cost}`;
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
