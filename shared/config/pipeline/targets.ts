import { checkKeys, isMapping, quote, type YamlMap } from "../read.ts";
import type { ConfigFile } from "../source.ts";

const WHEN = ["over_budget"];
const ENTRY_HINT =
  "name a target of daemon.yaml, or write { target: <name>, when: over_budget } for one run only while a period budget is spent, e.g. targets: [claude, { target: haiku, when: over_budget }]";

/**
 * `targets: [a, b, { target: c, when: over_budget }]`: the names are tried in order (worker/run/failover.ts);
 * an entry with `when: over_budget` is not one of them, but what runs instead while a period budget of
 * daemon.yaml's `budgets` is spent (readOverBudgetTargets, carried as `budget.overBudget`).
 */
export function readTargets(f: ConfigFile, root: YamlMap): string[] {
  const value = root.targets;
  if (value === undefined || value === null) {
    f.report(
      ["targets"],
      "required",
      '"targets" is required - list target names from the top-level "targets:" map of daemon.yaml, e.g. targets: [gpt]',
    );
    return [];
  }
  if (!Array.isArray(value)) {
    f.report(["targets"], "invalid_type", `"targets" must be a list - ${ENTRY_HINT}`);
    return [];
  }
  const names: string[] = [];
  value.forEach((item, index) => {
    if (typeof item === "string" && item.trim() !== "") names.push(item);
    else if (!isMapping(item))
      f.report(["targets", index], "invalid_type", `"targets[${index}]" - ${ENTRY_HINT}`);
  });
  if (value.length === 0)
    f.report(
      ["targets"],
      "required",
      '"targets" must not be empty - list at least one target of daemon.yaml',
    );
  else if (names.length === 0)
    f.report(
      ["targets"],
      "required",
      '"targets" must list at least one target of daemon.yaml by name - an over_budget entry only replaces them while a budget is spent',
    );
  return names;
}

/** The `{ target, when: over_budget }` entries of `targets`, in order; each checked here. */
export function readOverBudgetTargets(f: ConfigFile, root: YamlMap): string[] {
  if (!Array.isArray(root.targets)) return [];
  const names: string[] = [];
  root.targets.forEach((item, index) => {
    if (!isMapping(item)) return;
    const path = ["targets", index];
    checkKeys(f, item, path, ["target", "when"]);
    const { target, when } = item;
    if (typeof target !== "string" || target.trim() === "") {
      f.report(
        [...path, "target"],
        "required",
        `"targets[${index}].target" must name a target - ${ENTRY_HINT}`,
      );
      return;
    }
    if (typeof when !== "string" || !WHEN.includes(when)) {
      f.report(
        [...path, "when"],
        "invalid_value",
        `"targets[${index}].when" must be over_budget (got ${quote(when)}) - write { target: ${target}, when: over_budget }, or list ${target} by name to run on it always`,
      );
      return;
    }
    names.push(target);
  });
  return names;
}
