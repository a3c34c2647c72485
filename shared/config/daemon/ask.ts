import { checkKeys, mapping, strList, type YamlMap } from "../read.ts";
import type { ConfigFile } from "../source.ts";
import type { DaemonSettings } from "../types.ts";

export function readAsk(f: ConfigFile, root: YamlMap): DaemonSettings["ask"] {
  const hint =
    ' - svc does not boot without it; add "ask: { targets: [<target name>, ...] }" naming targets of the top-level "targets:" map';
  if (root.ask === undefined || root.ask === null) {
    f.report(["ask"], "required", `"ask" is required${hint}`);
    return { targets: [] };
  }
  const ask = mapping(f, root.ask, ["ask"]);
  if (!ask) return { targets: [] };
  checkKeys(f, ask, ["ask"], ["targets"]);
  const targets = strList(f, ask, "targets", ["ask"], { required: true, hint });
  if (targets && targets.length === 0)
    f.report(["ask", "targets"], "required", `"ask.targets" must not be empty${hint}`);
  return { targets: targets ?? [] };
}
