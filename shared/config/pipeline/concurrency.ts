import { bool, checkKeys, mapping, oneOf, type YamlMap } from "../read.ts";
import type { ConfigFile } from "../source.ts";
import type { Concurrency } from "../types.ts";

export const CONCURRENCY_GROUPS = ["pull_request", "repository", "pipeline"] as const;

/** `concurrency: { group, cancel_in_progress }`; absent: every event runs on its own. */
export function readConcurrency(f: ConfigFile, root: YamlMap): Concurrency | undefined {
  if (root.concurrency == null) return undefined;
  const raw = mapping(
    f,
    root.concurrency,
    ["concurrency"],
    " such as { group: pull_request, cancel_in_progress: true }",
  );
  if (!raw) return undefined;
  checkKeys(f, raw, ["concurrency"], ["group", "cancel_in_progress"]);
  const group = oneOf(f, raw, "group", ["concurrency"], CONCURRENCY_GROUPS, {
    required: true,
    hint: " - write pull_request, repository or pipeline: the runs of one group never run at once",
  });
  const cancelInProgress = bool(f, raw, "cancel_in_progress", ["concurrency"]) ?? false;
  return group ? { group, cancelInProgress } : undefined;
}
