import { duration, int, isMapping, mapping, str, strList, type YamlMap } from "../read.ts";
import { REMOVED_VALUES } from "../removed-keys.ts";
import type { ConfigFile } from "../source.ts";
import type { Pipeline } from "../types.ts";

export const ORCHESTRATOR_DEFAULTS = { maxTasks: 8, maxParallel: 2 } as const;
const ORCHESTRATOR_KEYS = [
  "strategy",
  "guidance",
  "targets",
  "max_tasks",
  "max_parallel",
  "task_timeout",
  "timeout",
];

export function readOrchestrator(f: ConfigFile, root: YamlMap): Pipeline["orchestrator"] {
  const value = root.orchestrator;
  if (value === undefined || value === null) return undefined;
  if (value === false) {
    f.report(["orchestrator"], "removed_key", REMOVED_VALUES.orchestratorFalse);
    return undefined;
  }
  const raw = mapping(f, value, ["orchestrator"], " such as { strategy: { type: auto } }");
  if (!raw) return undefined;
  for (const key of Object.keys(raw)) {
    // `tools` and `assess` are reported as removed keys (removed-keys.ts)
    if ([...ORCHESTRATOR_KEYS, "tools", "assess"].includes(key)) continue;
    f.report(
      ["orchestrator", key],
      "invalid_value",
      `"orchestrator.${key}" is not allowed - an orchestrator takes only ${ORCHESTRATOR_KEYS.join(", ")}; delete the key`,
    );
  }
  const strategy = raw.strategy;
  const strategyHint = ' - write "strategy: { type: auto }"';
  if (strategy == null) {
    f.report(["orchestrator", "strategy"], "required", `"orchestrator.strategy" is required${strategyHint}`);
  } else if (!isMapping(strategy) || strategy.type !== "auto" || Object.keys(strategy).length !== 1) {
    f.report(
      ["orchestrator", "strategy"],
      "invalid_value",
      `"orchestrator.strategy" must be { type: auto }${strategyHint}`,
    );
  }
  const path = ["orchestrator"];
  const guidance = str(f, raw, "guidance", path);
  const targets = strList(f, raw, "targets", path) ?? [];
  const maxTasks = int(f, raw, "max_tasks", path, { min: 1, max: 100 }) ?? ORCHESTRATOR_DEFAULTS.maxTasks;
  const maxParallel =
    int(f, raw, "max_parallel", path, { min: 1, max: 32 }) ?? ORCHESTRATOR_DEFAULTS.maxParallel;
  const taskTimeoutMs = raw.task_timeout == null ? undefined : duration(f, raw, "task_timeout", path, 0);
  const timeoutMs = raw.timeout == null ? undefined : duration(f, raw, "timeout", path, 0);
  return {
    strategy: { type: "auto" },
    ...(guidance ? { guidance } : {}),
    targets,
    maxTasks,
    maxParallel,
    ...(taskTimeoutMs ? { taskTimeoutMs } : {}),
    ...(timeoutMs ? { timeoutMs } : {}),
  };
}
