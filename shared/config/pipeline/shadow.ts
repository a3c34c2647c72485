import { checkKeys, mapping, quote, type YamlMap } from "../read.ts";
import type { ConfigFile } from "../source.ts";
import type { Pipeline, ShadowVersion } from "../types.ts";

export const VERSION_FILE = /^pipelines\/[A-Za-z0-9][A-Za-z0-9._-]*\.yaml$/;

/**
 * `shadow: { version_file, share }` (issue 57): a candidate version of this pipeline, read from
 * another file of pipelines/, run beside the live one on `share` of the events it fires, its
 * outputs held back; `share: 0` runs it on no live event, only in backtests. The candidate file is
 * not a pipeline of its own (load.ts pairs it).
 */
export function readShadow(
  f: ConfigFile,
  root: YamlMap,
  name: string,
): Omit<ShadowVersion, "candidate"> | undefined {
  if (root.shadow === undefined || root.shadow === null) return undefined;
  const raw = mapping(
    f,
    root.shadow,
    ["shadow"],
    " such as { version_file: pipelines/<name>.next.yaml, share: 0.5 }",
  );
  if (!raw) return undefined;
  checkKeys(f, raw, ["shadow"], ["version_file", "share"]);
  const file = raw.version_file;
  if (typeof file !== "string" || !VERSION_FILE.test(file)) {
    f.report(
      ["shadow", "version_file"],
      file === undefined ? "required" : "invalid_value",
      `"shadow.version_file" must name the candidate's file as pipelines/<file>.yaml (got ${quote(file)}) - copy pipelines/${name}.yaml to pipelines/${name}.next.yaml, change it, and name that`,
    );
    return undefined;
  }
  if (file === f.file) {
    f.report(
      ["shadow", "version_file"],
      "invalid_value",
      `"shadow.version_file" names this pipeline's own file - name the candidate's, e.g. pipelines/${name}.next.yaml`,
    );
    return undefined;
  }
  const share = raw.share ?? 1;
  if (typeof share !== "number" || !(share >= 0 && share <= 1)) {
    f.report(
      ["shadow", "share"],
      "invalid_value",
      `"shadow.share" must be a number from 0 to 1, the share of events the candidate also runs on (0: none, the candidate is loaded for backtests only) (got ${quote(share)})`,
    );
    return undefined;
  }
  return { versionFile: file, share };
}

/**
 * The pipeline a run runs: the live one, or for a shadow run its candidate; undefined when that is
 * no longer configured (the run then ends saying so).
 */
export function runPipeline(
  config: { pipelines: Readonly<Record<string, Pipeline>> },
  name: string,
  shadow: boolean,
): Pipeline | undefined {
  const live = config.pipelines[name];
  return shadow ? live?.shadow?.candidate : live;
}
