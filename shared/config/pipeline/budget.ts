import { checkKeys, int, mapping, num, quote, type YamlMap } from "../read.ts";
import { type ConfigFile, formatPath } from "../source.ts";
import type { Budget, Pipeline, PipelineBudget, Target } from "../types.ts";
import { readOverBudgetTargets } from "./targets.ts";

const BUDGET_KEYS = ["tokens", "cost", "requests"];

/**
 * `budget: { tokens, cost, requests }`: the most one invocation may spend on model calls, over
 * every attempt, failover and orchestrated task; any of the three, at least one. With it, the
 * `targets` entries `{ target, when: over_budget }`: where runs go while a period budget is spent.
 */
export function readBudget(f: ConfigFile, root: YamlMap): PipelineBudget | undefined {
  const overBudget = readOverBudgetTargets(f, root);
  const invocation = readInvocationBudget(f, root);
  if (overBudget.length === 0) return invocation;
  return { ...invocation, overBudget };
}

function readInvocationBudget(f: ConfigFile, root: YamlMap): Budget | undefined {
  if (root.budget === undefined || root.budget === null) return undefined;
  const raw = mapping(f, root.budget, ["budget"], " such as { tokens: 200000, cost: 2.5, requests: 50 }");
  if (!raw) return undefined;
  checkKeys(f, raw, ["budget"], BUDGET_KEYS);
  const path = ["budget"];
  const tokens = int(f, raw, "tokens", path, { min: 1 });
  const requests = int(f, raw, "requests", path, { min: 1 });
  const cost = num(f, raw, "cost", path, { min: 0, max: 1_000_000 });
  if (cost === 0) {
    f.report(
      ["budget", "cost"],
      "invalid_value",
      '"budget.cost" must be more than 0 (USD) - a run with no money to spend cannot start; delete the key for no cost bound',
    );
    return undefined;
  }
  if (raw.tokens == null && raw.cost == null && raw.requests == null) {
    f.report(
      ["budget"],
      "required",
      '"budget" must set at least one of tokens, cost (USD) or requests - e.g. budget: { tokens: 200000 }',
    );
    return undefined;
  }
  const budget: Budget = {
    ...(tokens !== undefined ? { tokens } : {}),
    ...(cost !== undefined ? { cost } : {}),
    ...(requests !== undefined ? { requests } : {}),
  };
  return Object.keys(budget).length > 0 ? budget : undefined;
}

/**
 * What the budget needs of the targets it may run on: a `price` for `cost`, and a runtime whose
 * model calls pass the worker's gateway (a `command` agent calls its model API itself).
 */
export function checkBudgetTargets(
  f: ConfigFile,
  pipeline: Pick<Pipeline, "budget" | "targets" | "orchestrator">,
  targets: Readonly<Record<string, Target>>,
): void {
  const { budget } = pipeline;
  if (!budget) return;
  for (const name of budget.overBudget ?? []) {
    if (targets[name]) continue;
    f.report(
      ["targets"],
      "unknown_target",
      `over_budget target ${quote(name)} is not defined - add it to the top-level "targets:" map of daemon.yaml (defined: ${Object.keys(targets).join(", ") || "none"})`,
    );
  }
  // the bounds of one invocation; a budget of over_budget targets alone bounds nothing
  if (budget.tokens === undefined && budget.cost === undefined && budget.requests === undefined) return;
  const names = new Set([
    ...pipeline.targets,
    ...(pipeline.orchestrator?.targets ?? []),
    ...(budget.overBudget ?? []),
  ]);
  for (const name of names) {
    const target = targets[name];
    if (!target) continue; // reported as unknown_target
    if (target.runtime === "command") {
      f.report(
        ["budget"],
        "invalid_value",
        `"budget" does not bound target ${JSON.stringify(name)}: a command agent calls its model API itself, past the worker's gateway - run the pipeline on openai, claude-code or codex targets, or accept that ${name}'s calls are not counted`,
        "warning",
      );
    } else if (budget.cost !== undefined && !target.price) {
      f.report(
        ["budget", "cost"],
        "required",
        `"${formatPath(["budget", "cost"])}" needs the price of every target the pipeline runs on - add "price: { input, output }" (USD per million tokens) to targets.${name} in daemon.yaml`,
      );
    }
  }
}
