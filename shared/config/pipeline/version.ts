import { quote, type YamlMap } from "../read.ts";
import { isSemVer } from "../semver.ts";
import type { ConfigFile } from "../source.ts";
import type { PipelineContext, PipelineDraft } from "./draft.ts";

export function readVersion(f: ConfigFile, root: YamlMap): string | undefined {
  if (root.version === undefined || root.version === null) return undefined;
  if (typeof root.version === "string" && isSemVer(root.version)) return root.version;
  f.report(
    ["version"],
    "version_invalid",
    `"version" must be a SemVer version such as 1.2.0 (got ${quote(root.version)}); quote it if YAML reads it as a number`,
  );
  return undefined;
}

/**
 * A pipeline without a "version" inherits the version of its single skill. Nothing is reported when
 * an invalid "version" was declared (readPipeline reported it), nor when the single skill is unknown.
 */
export function inheritedVersion(
  f: ConfigFile,
  draft: PipelineDraft,
  ctx: PipelineContext,
  closure: string[],
  errorsBefore: number,
): string | undefined {
  if (draft.versionDeclared) return undefined;
  const single = closure.length === 1 ? ctx.skills[closure[0]!] : undefined;
  if (single) return single.version;
  if (closure.length !== 1 || f.errorCount === errorsBefore)
    f.report(
      ["version"],
      "version_missing",
      'no single-skill version to inherit - declare an explicit "version" field',
    );
  return undefined;
}
