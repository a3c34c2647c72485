import { isMapping, mapping, type YamlMap } from "../read.ts";
import { isRemovedKey } from "../removed-keys.ts";
import type { ConfigFile } from "../source.ts";

const NOTHING_LEFT =
  '"lifecycle" allows no keys: its only key, "lifecycle.retrieve", was removed in 0.3.7 (its tuning moved to "knowledge.retrieval"), and svc has no lifecycle hooks (a command to run before a run\'s agent is a pipeline "setup" step)';

/**
 * `lifecycle` holds nothing any more, so a key under it is refused rather than ignored like a typo
 * elsewhere: an operator who wrote one expects it to act, and nothing would. The removed
 * `lifecycle.retrieve` is reported by the removed-key table with its replacement.
 */
export function checkLifecycle(f: ConfigFile, root: YamlMap): void {
  const value = root.lifecycle;
  if (value === undefined || value === null) return;
  if (!isMapping(value)) {
    mapping(f, value, ["lifecycle"], ` - ${NOTHING_LEFT}; delete it`);
    return;
  }
  for (const key of Object.keys(value)) {
    if (isRemovedKey(f.file, ["lifecycle", key])) continue;
    f.report(
      ["lifecycle", key],
      "unknown_key",
      `unknown key "lifecycle.${key}" - ${NOTHING_LEFT}; delete it`,
    );
  }
}
