import { mapping, type YamlMap } from "../read.ts";
import type { ConfigFile } from "../source.ts";
import type { PipelineContext, PipelineDraft } from "./draft.ts";

const PRINCIPAL_ID = /^[A-Za-z0-9_-]+\.principal\.[A-Za-z0-9_.:-]+$/;

export function readPrincipals(f: ConfigFile, root: YamlMap): Record<string, string> {
  const raw =
    root.principals == null
      ? {}
      : mapping(f, root.principals, ["principals"], " of binding name to <provider>.principal.<id>");
  const principals: Record<string, string> = {};
  for (const [binding, value] of Object.entries(raw ?? {})) {
    if (typeof value === "string" && PRINCIPAL_ID.test(value)) principals[binding] = value;
    else
      f.report(
        ["principals", binding],
        "invalid_value",
        `"principals.${binding}" must be written <provider>.principal.<id>, e.g. codehost.principal.42`,
      );
  }
  return principals;
}

export function checkSkillPrincipals(
  f: ConfigFile,
  draft: PipelineDraft,
  ctx: PipelineContext,
  closure: string[],
): void {
  for (const name of closure) {
    const required = ctx.skills[name]?.principal;
    if (!required) continue;
    if (draft.principal !== required || !draft.principals[required]) {
      f.report(
        ["principal"],
        "principal_required",
        `skill "${name}" requires the principal binding "${required}" for direct execution - add "principals: { ${required}: <provider>.principal.<id> }" and "principal: ${required}", or run it under an orchestrator`,
      );
    }
  }
}
