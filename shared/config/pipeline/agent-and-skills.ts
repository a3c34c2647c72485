import { quote, str, strList, type YamlMap } from "../read.ts";
import type { ConfigFile } from "../source.ts";
import type { PipelineContext, PipelineDraft } from "./draft.ts";

/** Who runs: an agent, or a skill with its companions (at least one of agent and skill). */
export function readIdentity(
  f: ConfigFile,
  root: YamlMap,
): { agent: string | undefined; skill: string | undefined; companions: string[] } {
  const agent = str(f, root, "agent", []);
  const skill = str(f, root, "skill", []);
  const companions = strList(f, root, "companions", []) ?? [];
  if (root.agent == null && root.skill == null) {
    f.report(
      [],
      "required",
      'names no "agent" and no "skill" - add "agent: <name>" (agents/<name>/PERSONA.md) or "skill: <name>"',
    );
  }
  if (companions.length > 0 && root.skill == null) {
    f.report(["companions"], "required", '"companions" needs a governing "skill" - add "skill: <name>"');
  }
  return { agent, skill, companions };
}

/** The agent and every skill the pipeline names must exist; returns the skills (governing first). */
export function checkAgentAndSkills(f: ConfigFile, draft: PipelineDraft, ctx: PipelineContext): string[] {
  if (draft.agent && !ctx.agents.has(draft.agent)) {
    f.report(
      ["agent"],
      "unknown_agent",
      `agent ${quote(draft.agent)} is not defined - create agents/${draft.agent}/PERSONA.md or name one of: ${[...ctx.agents].join(", ") || "none defined"}`,
    );
  }
  const closure = [draft.skill, ...draft.companions].filter((name): name is string => Boolean(name));
  closure.forEach((skill, index) => {
    if (ctx.skills[skill]) return;
    const path = index === 0 && draft.skill ? ["skill"] : ["companions", draft.skill ? index - 1 : index];
    f.report(
      path,
      "unknown_skill",
      `skill ${quote(skill)} is not defined - create skills/${skill}/SKILL.md or name one of: ${Object.keys(ctx.skills).join(", ") || "none defined"}`,
    );
  });
  return closure;
}
