import type { Dirent } from "node:fs";
import { readdir, readFile, stat } from "node:fs/promises";
import { join, resolve } from "node:path";
import { type DaemonSettings, type DeclaredNames, declaredNames, readDaemon } from "./daemon.ts";
import { readAgent, readMembers, readPolicy, readSkill } from "./documents.ts";
import { type PipelineDraft, readPipeline, resolvePipeline } from "./pipeline.ts";
import { quote } from "./read.ts";
import { REMOVED_VALUES, reportRemovedKeys } from "./removed-keys.ts";
import { reportDuplicateScheduleNames } from "./schedule.ts";
import { substituteEnv } from "./secrets.ts";
import { ConfigFile, parseYaml } from "./source.ts";
import type { Agent, ConfigProblem, ConfigSnapshot, LoadResult, Pipeline, Policy, Skill } from "./types.ts";

export interface LoadOptions {
  /** the configuration directory (relative paths resolve against the working directory) */
  dir: string;
  /** where `${NAME}` substitutions and SVC_HOST / SVC_PORT come from; defaults to process.env */
  env?: NodeJS.ProcessEnv;
}

/**
 * Reads and validates the whole configuration directory. Returns one deep-frozen snapshot, or
 * every problem of every file (never only the first). Warnings come back in `problems` either way.
 */
export async function loadConfig(options: LoadOptions): Promise<LoadResult> {
  const dir = resolve(options.dir);
  const env = options.env ?? process.env;
  const problems: ConfigProblem[] = [];

  const dirStat = await stat(dir).catch(() => undefined);
  if (!dirStat?.isDirectory()) {
    new ConfigFile(".", problems, dir).report(
      [],
      "config_dir_missing",
      `${dirStat ? "is not a directory" : "does not exist"} - create the configuration directory with daemon.yaml and pipelines/, or point SVC_CONFIG_DIR (or --dir) at it`,
    );
    return { ok: false, problems };
  }

  const [daemonText, membersText, policyFiles, agentDirs, skillDirs, pipelineFiles, protocolsDir] =
    await Promise.all([
      readText(dir, "daemon.yaml"),
      readText(dir, "members.yaml"),
      list(dir, "policies"),
      list(dir, "agents"),
      list(dir, "skills"),
      list(dir, "pipelines"),
      stat(join(dir, "protocols")).catch(() => undefined),
    ]);

  if (protocolsDir)
    new ConfigFile("protocols", problems).report([], "removed_key", REMOVED_VALUES.protocolsDir);

  // daemon.yaml
  const daemonFile = new ConfigFile("daemon.yaml", problems);
  let daemon: DaemonSettings | undefined;
  let declared: DeclaredNames = declaredNames(undefined);
  if (daemonText.kind === "missing") {
    daemonFile.report(
      [],
      "file_missing",
      `is missing - create ${join(dir, "daemon.yaml")} with at least "ask: { targets: [...] }" and a "targets:" map`,
    );
  } else if (daemonText.kind === "error") {
    daemonFile.report([], "file_unreadable", `cannot be read (${daemonText.reason}) - check its permissions`);
  } else {
    const parsed = parseYaml(daemonFile, daemonText.text);
    if (parsed) {
      reportRemovedKeys(daemonFile, parsed.data);
      declared = declaredNames(parsed.data);
      daemon = readDaemon(daemonFile, substituteEnv(daemonFile, parsed.data, env), env);
    }
  }

  // policies/*.md
  const policies: Record<string, Policy> = {};
  await Promise.all(
    policyFiles
      .filter((entry) => entry.isFile() && entry.name.endsWith(".md"))
      .map(async (entry) => {
        const name = entry.name.slice(0, -3);
        const f = new ConfigFile(`policies/${entry.name}`, problems);
        const text = await readOrReport(f, join(dir, "policies", entry.name));
        const policy = text === undefined ? undefined : readPolicy(f, name, text);
        if (policy) policies[name] = policy;
      }),
  );
  inNameOrder(policies);

  // agents/<name>/PERSONA.md
  const agents: Record<string, Agent> = {};
  const documentFiles = new Map<string, ConfigFile>();
  const agentNames = new Set<string>();
  await Promise.all(
    agentDirs
      .filter((entry) => entry.isDirectory())
      .map(async (entry) => {
        const name = entry.name;
        agentNames.add(name);
        const [persona, soul] = await Promise.all([
          readText(dir, `agents/${name}/PERSONA.md`),
          stat(join(dir, "agents", name, "SOUL.md")).catch(() => undefined),
        ]);
        if (soul)
          new ConfigFile(`agents/${name}/SOUL.md`, problems).report(
            [],
            "removed_key",
            REMOVED_VALUES.soulFile,
          );
        const f = new ConfigFile(`agents/${name}/PERSONA.md`, problems);
        if (persona.kind === "missing") {
          if (!soul)
            f.report(
              [],
              "file_missing",
              `is missing - every agent directory needs a PERSONA.md with frontmatter and persona text`,
            );
          return;
        }
        if (persona.kind === "error") {
          f.report([], "file_unreadable", `cannot be read (${persona.reason}) - check its permissions`);
          return;
        }
        documentFiles.set(f.file, f);
        const agent = readAgent(f, name, persona.text);
        if (agent) agents[name] = agent;
      }),
  );
  inNameOrder(agents);

  // skills/<name>/SKILL.md
  const skills: Record<string, Skill> = {};
  await Promise.all(
    skillDirs
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
          f.report([], "file_unreadable", `cannot be read (${text.reason}) - check its permissions`);
          return;
        }
        documentFiles.set(f.file, f);
        const skill = readSkill(f, name, text.text);
        if (skill) skills[name] = skill;
      }),
  );
  inNameOrder(skills);

  // policy references of agents and skills
  for (const holder of [...Object.values(agents), ...Object.values(skills)]) {
    const f = documentFiles.get(holder.file) ?? new ConfigFile(holder.file, problems);
    holder.policies.forEach((policy, index) => {
      if (policies[policy]) return;
      f.report(
        ["policies", index],
        "unknown_policy_reference",
        `policy ${quote(policy)} resolves to no file - create policies/${policy}.md or remove it from "policies"`,
      );
    });
  }

  // members.yaml (optional)
  const membersFile = new ConfigFile("members.yaml", problems);
  let members: ConfigSnapshot["members"] = [];
  if (membersText.kind === "error") {
    membersFile.report(
      [],
      "file_unreadable",
      `cannot be read (${membersText.reason}) - check its permissions`,
    );
  } else if (membersText.kind === "text") {
    const parsed = parseYaml(membersFile, membersText.text);
    if (parsed) members = readMembers(membersFile, parsed.data);
  }

  // pipelines/*.yaml
  const drafts: { f: ConfigFile; draft: PipelineDraft }[] = [];
  const yamlFiles = pipelineFiles.filter((entry) => entry.isFile() && entry.name.endsWith(".yaml"));
  for (const entry of pipelineFiles) {
    if (entry.isFile() && entry.name.endsWith(".yml")) {
      new ConfigFile(`pipelines/${entry.name}`, problems).report(
        [],
        "unknown_key",
        `is ignored - pipeline files end in .yaml; rename it to ${entry.name.slice(0, -4)}.yaml`,
        "warning",
      );
    }
  }
  const texts = await Promise.all(
    yamlFiles.map(async (entry) => {
      const f = new ConfigFile(`pipelines/${entry.name}`, problems);
      return {
        f,
        name: entry.name.slice(0, -5),
        text: await readOrReport(f, join(dir, "pipelines", entry.name)),
      };
    }),
  );
  for (const { f, name, text } of texts) {
    if (text === undefined) continue;
    const parsed = parseYaml(f, text);
    const draft = parsed && readPipeline(f, name, parsed.data);
    if (draft) drafts.push({ f, draft });
  }
  reportDuplicateScheduleNames(
    drafts.map(({ f, draft }) => ({ f, schedules: draft.trigger?.schedule ?? [] })),
  );
  const context = {
    daemon: daemon ?? emptyDaemon(),
    declared,
    agents: agentNames,
    skills,
    daemonKnown: daemon !== undefined,
  };
  const pipelines: Record<string, Pipeline> = {};
  for (const { f, draft } of drafts) {
    const pipeline = resolvePipeline(f, draft, context);
    if (pipeline) pipelines[pipeline.name] = pipeline;
  }

  problems.sort(byLocation);
  if (!daemon || problems.some((problem) => problem.severity === "error")) return { ok: false, problems };
  const config: ConfigSnapshot = { dir, ...daemon, pipelines, agents, skills, policies, members };
  return { ok: true, config: deepFreeze(config), problems };
}

type Text = { kind: "text"; text: string } | { kind: "missing" } | { kind: "error"; reason: string };

async function readText(dir: string, file: string): Promise<Text> {
  try {
    return { kind: "text", text: await readFile(join(dir, file), "utf8") };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return { kind: "missing" };
    return { kind: "error", reason: code ?? "read error" };
  }
}

async function readOrReport(f: ConfigFile, path: string): Promise<string | undefined> {
  try {
    return await readFile(path, "utf8");
  } catch (error) {
    f.report(
      [],
      "file_unreadable",
      `cannot be read (${(error as NodeJS.ErrnoException).code ?? "read error"}) - check its permissions`,
    );
    return undefined;
  }
}

/**
 * Files are read concurrently and land in completion order; put the record back in name order so
 * the snapshot, and every message that lists its names, is the same on every machine.
 */
function inNameOrder<T>(record: Record<string, T>): void {
  const entries = Object.entries(record).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  for (const [key] of entries) delete record[key];
  for (const [key, value] of entries) record[key] = value;
}

async function list(dir: string, sub: string): Promise<Dirent[]> {
  try {
    const entries = await readdir(join(dir, sub), { withFileTypes: true });
    return entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  } catch {
    return [];
  }
}

function emptyDaemon(): DaemonSettings {
  return {
    server: { host: "127.0.0.1", port: 7420 },
    webhooks: { maxBodyBytes: 1_048_576, sources: {} },
    targets: {},
    ask: { targets: [] },
    knowledge: { retrieval: { engine: "local", rewrite: { targets: [] } } },
    repos: {},
    channels: { chat: { bots: {} } },
    queue: {},
    hostTools: {},
    auth: null,
    worker: { concurrency: 4, graceMs: 30_000 },
    workspaces: { checkoutRetentionDays: 30, transcriptRetentionDays: 90 },
  };
}

function byLocation(a: ConfigProblem, b: ConfigProblem): number {
  if (a.file !== b.file) return a.file < b.file ? -1 : 1;
  return (a.line ?? 0) - (b.line ?? 0) || (a.column ?? 0) - (b.column ?? 0);
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}
