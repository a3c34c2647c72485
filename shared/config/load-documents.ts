import type { Dirent } from "node:fs";
import { stat } from "node:fs/promises";
import { join } from "node:path";
import { inNameOrder, readOrReport, readText, reportUnreadable } from "./config-files.ts";
import { readAgent, readPolicy, readSkill } from "./documents.ts";
import { quote } from "./read.ts";
import { REMOVED_VALUES } from "./removed-keys.ts";
import { ConfigFile } from "./source.ts";
import type { Agent, ConfigProblem, Policy, Skill } from "./types.ts";

/**
 * The Markdown documents of a configuration directory (policies, agents, skills), read concurrently.
 * `files` collects the ConfigFile of every agent and skill document read, so a later check reports
 * on the same file (and the same line positions) as its first reading.
 */
export interface DocumentReader {
  dir: string;
  problems: ConfigProblem[];
  files: Map<string, ConfigFile>;
}

/** policies/*.md */
export async function readPolicies(
  reader: DocumentReader,
  entries: Dirent[],
): Promise<Record<string, Policy>> {
  const { dir, problems } = reader;
  const policies: Record<string, Policy> = {};
  await Promise.all(
    entries
      .filter((entry) => entry.isFile() && entry.name.endsWith(".md"))
      .map(async (entry) => {
        const name = entry.name.slice(0, -3);
        const f = new ConfigFile(`policies/${entry.name}`, problems);
        const text = await readOrReport(f, dir, `policies/${entry.name}`);
        const policy = text === undefined ? undefined : readPolicy(f, name, text);
        if (policy) policies[name] = policy;
      }),
  );
  inNameOrder(policies);
  return policies;
}

/** agents/<name>/PERSONA.md; `names` is every agent directory, read or not (pipelines may name them). */
export async function readAgents(
  reader: DocumentReader,
  entries: Dirent[],
): Promise<{ agents: Record<string, Agent>; names: Set<string> }> {
  const agents: Record<string, Agent> = {};
  const names = new Set<string>();
  await Promise.all(
    entries
      .filter((entry) => entry.isDirectory())
      .map(async (entry) => {
        names.add(entry.name);
        const agent = await readAgentDir(reader, entry.name);
        if (agent) agents[entry.name] = agent;
      }),
  );
  inNameOrder(agents);
  return { agents, names };
}

async function readAgentDir(reader: DocumentReader, name: string): Promise<Agent | undefined> {
  const { dir, problems } = reader;
  const [persona, soul] = await Promise.all([
    readText(dir, `agents/${name}/PERSONA.md`),
    stat(join(dir, "agents", name, "SOUL.md")).catch(() => undefined),
  ]);
  if (soul)
    new ConfigFile(`agents/${name}/SOUL.md`, problems).report([], "removed_key", REMOVED_VALUES.soulFile);
  const f = new ConfigFile(`agents/${name}/PERSONA.md`, problems);
  if (persona.kind === "missing") {
    if (!soul)
      f.report(
        [],
        "file_missing",
        `is missing - every agent directory needs a PERSONA.md with frontmatter and persona text`,
      );
    return undefined;
  }
  if (persona.kind === "error") {
    reportUnreadable(f, persona.reason);
    return undefined;
  }
  reader.files.set(f.file, f);
  return readAgent(f, name, persona.text);
}

/** skills/<name>/SKILL.md */
export async function readSkills(reader: DocumentReader, entries: Dirent[]): Promise<Record<string, Skill>> {
  const { dir, problems } = reader;
  const skills: Record<string, Skill> = {};
  await Promise.all(
    entries
      .filter((entry) => entry.isDirectory())
      .map(async (entry) => {
        const name = entry.name;
        const f = new ConfigFile(`skills/${name}/SKILL.md`, problems);
        const text = await readText(dir, `skills/${name}/SKILL.md`);
        if (text.kind === "missing") {
          f.report(
            [],
            "file_missing",
            "is missing - every skill directory needs a SKILL.md with frontmatter (metadata.version)",
          );
          return;
        }
        if (text.kind === "error") {
          reportUnreadable(f, text.reason);
          return;
        }
        reader.files.set(f.file, f);
        const skill = readSkill(f, name, text.text);
        if (skill) skills[name] = skill;
      }),
  );
  inNameOrder(skills);
  return skills;
}

/** Every policy an agent or skill names must be a file under policies/. */
export function reportUnknownPolicies(
  reader: DocumentReader,
  holders: (Agent | Skill)[],
  policies: Record<string, Policy>,
): void {
  for (const holder of holders) {
    const f = reader.files.get(holder.file) ?? new ConfigFile(holder.file, reader.problems);
    holder.policies.forEach((policy, index) => {
      if (policies[policy]) return;
      f.report(
        ["policies", index],
        "unknown_policy_reference",
        `policy ${quote(policy)} resolves to no file - create policies/${policy}.md or remove it from "policies"`,
      );
    });
  }
}
