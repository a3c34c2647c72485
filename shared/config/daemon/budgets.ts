import { checkKeys, num, oneOf, quote, type YamlMap } from "../read.ts";
import type { ConfigFile } from "../source.ts";
import type { BudgetPeriod, BudgetPeriods, Target } from "../types.ts";
import { child } from "./read-helpers.ts";

const SCOPES = ["org", "repos"] as const;
const EXAMPLE = "{ per: day, cost: 5 }";

/**
 * `budgets: { org: { per, cost }, repos: { per, cost }, members_first }`: the most every run together
 * (`org`) and each repository's runs (`repos`, each repository on its own) may spend on model calls
 * in one calendar day or month, UTC. A run that would start past it waits until the period resets
 * (worker/run/budget-periods.ts); with `members_first: true` the held runs of the repository's team
 * resume before the rest's.
 */
export function readBudgets(f: ConfigFile, root: YamlMap): BudgetPeriods | undefined {
  const block = child(f, root, "budgets", []);
  if (!block) return undefined;
  checkKeys(f, block, ["budgets"], [...SCOPES, "members_first"]);
  const budgets: BudgetPeriods = {};
  for (const scope of SCOPES) {
    const period = readPeriod(f, block, scope);
    if (period) budgets[scope] = period;
  }
  const membersFirst = readMembersFirst(f, block);
  if (membersFirst) budgets.membersFirst = true;
  return budgets.org || budgets.repos ? budgets : undefined;
}

function readMembersFirst(f: ConfigFile, block: YamlMap): boolean {
  if (!("members_first" in block)) return false;
  const value = block.members_first;
  const path = ["budgets", "members_first"];
  if (typeof value !== "boolean") {
    f.report(
      path,
      "invalid_type",
      `"budgets.members_first" must be true or false (got ${quote(value)}) - true resumes the held runs of the repository's team (owners, members, collaborators) before the rest's when a period resets`,
    );
    return false;
  }
  if (value && !block.org && !block.repos)
    f.report(
      path,
      "invalid_value",
      `"budgets.members_first" orders the runs a spent budgets.org or budgets.repos holds, and neither is set - add one, or delete members_first`,
      "warning",
    );
  return value;
}

function readPeriod(f: ConfigFile, block: YamlMap, scope: (typeof SCOPES)[number]): BudgetPeriod | undefined {
  const raw = child(f, block, scope, ["budgets"]);
  if (!raw) return undefined;
  const path = ["budgets", scope];
  checkKeys(f, raw, path, ["per", "cost"]);
  const hint = ` - write budgets.${scope}: ${EXAMPLE} in daemon.yaml`;
  const per = oneOf(f, raw, "per", path, ["day", "month"] as const, { required: true, hint });
  const cost = num(f, raw, "cost", path, { required: true, hint, min: 0, max: 1_000_000 });
  if (cost === 0) {
    f.report(
      [...path, "cost"],
      "invalid_value",
      `"budgets.${scope}.cost" must be more than 0 (USD) - with nothing to spend no run would ever start; delete budgets.${scope} for no ${scope === "org" ? "organisation-wide" : "per-repository"} budget`,
    );
    return undefined;
  }
  return per && cost !== undefined ? { per, cost } : undefined;
}

/**
 * A period budget counts cost, and only a target with a `price` has one: a target without counts
 * nothing towards it (a warning, since a free local model is a fine thing to run past a budget).
 */
export function checkBudgetPrices(
  f: ConfigFile,
  budgets: BudgetPeriods | undefined,
  targets: Readonly<Record<string, Target>>,
): void {
  if (!budgets) return;
  const unpriced = Object.values(targets)
    .filter((target) => target.runtime !== "command" && !target.price)
    .map((target) => target.name);
  if (unpriced.length === 0) return;
  f.report(
    ["budgets"],
    "required",
    `"budgets" counts cost, and targets ${unpriced.join(", ")} have no price: their runs count nothing towards it - add "price: { input, output }" (USD per million tokens) to each in daemon.yaml`,
    "warning",
  );
}
