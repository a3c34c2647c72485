import { strList, type YamlMap } from "../read.ts";
import type { ConfigFile } from "../source.ts";

export function readTargets(f: ConfigFile, root: YamlMap): string[] {
  const targets =
    strList(f, root, "targets", [], {
      required: true,
      hint: ' - list target names from the top-level "targets:" map of daemon.yaml, e.g. targets: [gpt]',
    }) ?? [];
  if (root.targets != null && Array.isArray(root.targets) && root.targets.length === 0) {
    f.report(
      ["targets"],
      "required",
      '"targets" must not be empty - list at least one target of daemon.yaml',
    );
  }
  return targets;
}
