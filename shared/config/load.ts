import type { Dirent } from "node:fs";
import { stat } from "node:fs/promises";
import { join, resolve } from "node:path";
import { list, readOrReport, readText, reportUnreadable, type Text } from "./config-files.ts";
import { type DeclaredNames, declaredNames } from "./daemon/declared-names.ts";
import {
  DEFAULT_CHECKOUT_RETENTION_DAYS,
  DEFAULT_REPO_CACHE_MAX_SIZE_BYTES,
  DEFAULT_TRANSCRIPT_RETENTION_DAYS,
} from "./daemon/workspaces.ts";
import { readDaemon } from "./daemon.ts";
import { readMembers } from "./documents.ts";
import {
  type DocumentReader,
  readAgents,
  readPolicies,
  readSkills,
  reportUnknownPolicies,
} from "./load-documents.ts";
import type { PipelineContext, PipelineDraft } from "./pipeline/draft.ts";
import { readPipeline, resolvePipeline } from "./pipeline.ts";
import { REMOVED_VALUES, reportRemovedKeys } from "./removed-keys.ts";
import { reportDuplicateScheduleNames } from "./schedule.ts";
import { substituteEnv } from "./secrets.ts";
import { ConfigFile, parseYaml } from "./source.ts";
import type { ConfigProblem, ConfigSnapshot, DaemonSettings, LoadResult, Pipeline } from "./types.ts";

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
  const { daemon, declared } = readDaemonFile(dir, daemonText, problems, env);
  const reader: DocumentReader = { dir, problems, files: new Map() };
  const policies = await readPolicies(reader, policyFiles);
  const { agents, names: agentNames } = await readAgents(reader, agentDirs);
  const skills = await readSkills(reader, skillDirs);
  reportUnknownPolicies(reader, [...Object.values(agents), ...Object.values(skills)], policies);
  const members = readMembersFile(membersText, problems);
  const pipelines = await readPipelines(dir, pipelineFiles, problems, {
    daemon: daemon ?? emptyDaemon(),
    declared,
    agents: agentNames,
    skills,
    daemonKnown: daemon !== undefined,
  });

  problems.sort(byLocation);
  if (!daemon || problems.some((problem) => problem.severity === "error")) return { ok: false, problems };
  const config: ConfigSnapshot = { dir, ...daemon, pipelines, agents, skills, policies, members };
  return { ok: true, config: deepFreeze(config), problems };
}

/** daemon.yaml: required. `declared` is what it names even when it does not validate. */
function readDaemonFile(
  dir: string,
  text: Text,
  problems: ConfigProblem[],
  env: NodeJS.ProcessEnv,
): { daemon: DaemonSettings | undefined; declared: DeclaredNames } {
  const f = new ConfigFile("daemon.yaml", problems);
  if (text.kind === "missing") {
    f.report(
      [],
      "file_missing",
      `is missing - create ${join(dir, "daemon.yaml")} with at least "ask: { targets: [...] }" and a "targets:" map`,
    );
    return { daemon: undefined, declared: declaredNames(undefined) };
  }
  if (text.kind === "error") {
    reportUnreadable(f, text.reason);
    return { daemon: undefined, declared: declaredNames(undefined) };
  }
  const parsed = parseYaml(f, text.text);
  if (!parsed) return { daemon: undefined, declared: declaredNames(undefined) };
  reportRemovedKeys(f, parsed.data);
  const declared = declaredNames(parsed.data);
  return { daemon: readDaemon(f, substituteEnv(f, parsed.data, env), env), declared };
}

/** members.yaml: optional. */
function readMembersFile(text: Text, problems: ConfigProblem[]): ConfigSnapshot["members"] {
  const f = new ConfigFile("members.yaml", problems);
  if (text.kind === "error") reportUnreadable(f, text.reason);
  if (text.kind !== "text") return [];
  const parsed = parseYaml(f, text.text);
  return parsed ? readMembers(f, parsed.data) : [];
}

/**
 * pipelines/*.yaml: every file is read and checked on its own first (readPipeline), then against
 * the rest of the configuration (resolvePipeline), so one broken file never hides another's problems.
 */
async function readPipelines(
  dir: string,
  entries: Dirent[],
  problems: ConfigProblem[],
  context: PipelineContext,
): Promise<Record<string, Pipeline>> {
  for (const entry of entries) {
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
    entries
      .filter((entry) => entry.isFile() && entry.name.endsWith(".yaml"))
      .map(async (entry) => {
        const f = new ConfigFile(`pipelines/${entry.name}`, problems);
        return {
          f,
          name: entry.name.slice(0, -5),
          text: await readOrReport(f, dir, `pipelines/${entry.name}`),
        };
      }),
  );
  const drafts: { f: ConfigFile; draft: PipelineDraft }[] = [];
  for (const { f, name, text } of texts) {
    if (text === undefined) continue;
    const parsed = parseYaml(f, text);
    const draft = parsed && readPipeline(f, name, parsed.data);
    if (draft) drafts.push({ f, draft });
  }
  reportDuplicateScheduleNames(
    drafts.map(({ f, draft }) => ({ f, schedules: draft.trigger?.schedule ?? [] })),
  );
  // a file a pipeline names as its shadow's version_file is that candidate, not a pipeline of its own
  const candidates = new Map<string, { f: ConfigFile; draft: PipelineDraft }>();
  for (const entry of drafts) candidates.set(entry.f.file, entry);
  const named = new Set(drafts.flatMap(({ draft }) => (draft.shadow ? [draft.shadow.versionFile] : [])));
  const pipelines: Record<string, Pipeline> = {};
  for (const { f, draft } of drafts) {
    // one that names a shadow of its own stays a pipeline, and its pairing is refused below
    if (named.has(f.file) && !draft.shadow) continue;
    const pipeline = resolvePipeline(f, draft, context);
    if (!pipeline) continue;
    pipelines[pipeline.name] = pipeline;
    if (pipeline.shadow) pipeline.shadow = pairShadow(f, pipeline, candidates, context, texts);
  }
  return pipelines;
}

/**
 * Resolves a pipeline's shadow candidate from its version_file: named like the live pipeline,
 * with its own version (which must differ), and no shadow of its own. Its `trigger` is not read:
 * it runs on the events the live pipeline fires.
 */
function pairShadow(
  f: ConfigFile,
  live: Pipeline,
  candidates: Map<string, { f: ConfigFile; draft: PipelineDraft }>,
  context: PipelineContext,
  texts: { f: ConfigFile; text: string | undefined }[],
): Pipeline["shadow"] {
  const shadow = live.shadow!;
  const found = candidates.get(shadow.versionFile);
  if (!found) {
    // a file that exists but did not parse has reported its own problems already
    if (!texts.some((entry) => entry.f.file === shadow.versionFile))
      f.report(
        ["shadow", "version_file"],
        "invalid_value",
        `"shadow.version_file" names ${shadow.versionFile}, which does not exist - copy ${live.file} there and change it`,
      );
    return { versionFile: shadow.versionFile, share: shadow.share };
  }
  const { shadow: own, ...draft } = found.draft;
  if (own)
    found.f.report(
      ["shadow"],
      "invalid_value",
      `is refused in a shadow candidate (${live.file} runs it) - delete it`,
    );
  const candidate = resolvePipeline(found.f, { ...draft, name: live.name }, context);
  if (candidate && candidate.version === live.version) {
    found.f.report(
      ["version"],
      "invalid_value",
      `the shadow candidate of ${live.name} has the live version ${live.version} - give it its own (e.g. a pre-release such as ${live.version}-next.1), so its runs can be told apart`,
    );
    return { versionFile: shadow.versionFile, share: shadow.share };
  }
  return {
    versionFile: shadow.versionFile,
    share: shadow.share,
    ...(candidate && !own ? { candidate } : {}),
  };
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
    workspaces: {
      checkoutRetentionDays: DEFAULT_CHECKOUT_RETENTION_DAYS,
      transcriptRetentionDays: DEFAULT_TRANSCRIPT_RETENTION_DAYS,
      repoCache: { maxSizeBytes: DEFAULT_REPO_CACHE_MAX_SIZE_BYTES },
    },
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
