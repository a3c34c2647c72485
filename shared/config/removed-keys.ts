import type { ConfigFile, KeyPath } from "./source.ts";

/**
 * Keys removed or renamed by a release. Each fails the load with a message naming the
 * replacement (contract, "Errors" and "Changes by release"). `*` matches any map key.
 * Value-shaped removals (`orchestrator: false`, member `kind: bot`) and removed files
 * (`SOUL.md`, `protocols/`) are below the tables, so every migration message lives here.
 */
interface RemovedKey {
  path: readonly string[];
  /** the message after the `<file>: ` prefix */
  text: string;
}

const KNOWLEDGE_MODE =
  '"knowledge.mode" was removed in 0.5.1 - use "knowledge.method" and "knowledge.delivery": ' +
  "the local-engine mode became method: hybrid, delivery: prompt; mount became method: none, delivery: file; " +
  "ambient became method: none, delivery: search; catalog became method: none, delivery: browse";

const TARGETS_HINT = (key: string) =>
  `"${key}" was removed in 0.6.5 - define a named target (runtime, model, credentials) in the top-level "targets:" map of daemon.yaml and list it in "targets: [<name>, ...]"`;

export const REMOVED_DAEMON_KEYS: readonly RemovedKey[] = [
  {
    path: ["webhooks", "secret"],
    text: '"webhooks.secret" was removed in 0.9.0 - move it to a codehost source: webhooks.sources.<name>: { verify: codehost, secret: ... }',
  },
  {
    path: ["webhooks", "tracker"],
    text: '"webhooks.tracker" was removed in 0.9.0 - move the tracker secret to a tracker source: webhooks.sources.<name>: { verify: tracker, secret: ... }',
  },
  {
    path: ["webhooks", "tokens"],
    text: '"webhooks.tokens" was removed in 0.9.0 - each webhooks.tokens.<name> becomes a bearer source: webhooks.sources.<name>: { verify: bearer, secret: ... }',
  },
  {
    path: ["defaults", "output"],
    text: '"defaults.output" is removed; migrate to "result" and "outputs" in each pipeline file',
  },
  {
    path: ["tracing"],
    text: 'the tracing sink block "tracing" was removed in 0.8.0 - delete it; svc writes one JSON log object per line and records lineage in the database (svc trace)',
  },
  {
    path: ["workspaces", "retentionDays"],
    text: '"workspaces.retentionDays" was removed in 0.7.0 - use "workspaces.checkoutRetentionDays" (default 30) and "workspaces.transcriptRetentionDays" (default 90)',
  },
  {
    path: ["agents", "*", "watch"],
    text: '"agents.<name>.watch" was removed in 0.11.0 - use "trigger.tracker" on an agent session event in a pipeline',
  },
  {
    path: ["lifecycle", "retrieve"],
    text: '"lifecycle.retrieve" was removed in 0.3.7 - move its tuning to "knowledge.retrieval" (engine, topK, minScore, rewrite.targets)',
  },
  {
    path: ["orchestrator", "tools"],
    text: '"orchestrator.tools" was removed in 0.9.0 - declare each tool under the top-level "host_tools" map with "exec" and "args"',
  },
  {
    path: ["host_tools", "*", "run"],
    text: '"run" in a host tool was removed in 0.9.0 - declare "exec" (an explicit executable path) and "args" (a list, one argv element each, $name substitution, no shell)',
  },
  {
    path: ["ask", "target"],
    text: '"ask.target" was removed in 0.10.0 - use "ask.targets", an ordered list of names from the top-level "targets:" map',
  },
  {
    path: ["ask", "runtime"],
    text: '"ask.runtime" was removed in 0.10.0 - define a named target in the top-level "targets:" map and list it in "ask.targets"',
  },
  {
    path: ["ask", "model"],
    text: '"ask.model" was removed in 0.10.0 - define a named target in the top-level "targets:" map and list it in "ask.targets"',
  },
  {
    path: ["knowledge", "retrieval", "rewrite", "target"],
    text: '"knowledge.retrieval.rewrite.target" was removed in 0.10.0 - use "knowledge.retrieval.rewrite.targets", an ordered list of target names',
  },
  {
    path: ["sandboxes", "forwardEnv"],
    text: '"sandboxes.forwardEnv" was removed in 0.6.1 - declare the variables in each pipeline\'s "env" manifest',
  },
  { path: ["knowledge", "mode"], text: KNOWLEDGE_MODE },
];

export const REMOVED_PIPELINE_KEYS: readonly RemovedKey[] = [
  { path: ["output"], text: '"output" is removed; migrate to "result" and "outputs"' },
  {
    path: ["trigger", "manual"],
    text: '"trigger.manual" was removed - every pipeline is fireable by name, so delete the key',
  },
  { path: ["prompt"], text: '"prompt" was renamed in 0.5.0 - rename the key to "instructions"' },
  ...["runtime", "model", "effort", "credential", "fallbacks"].map((key) => ({
    path: [key],
    text: TARGETS_HINT(key),
  })),
  {
    path: ["sandbox", "forwardEnv"],
    text: '"sandbox.forwardEnv" was removed in 0.6.1 - declare the variables in the pipeline\'s "env" manifest',
  },
  { path: ["knowledge", "mode"], text: KNOWLEDGE_MODE },
  {
    path: ["orchestrator", "tools"],
    text: '"orchestrator.tools" was removed in 0.9.0 - declare each tool under the top-level "host_tools" map of daemon.yaml',
  },
  {
    path: ["orchestrator", "assess"],
    text: '"orchestrator.assess" was renamed in 0.7.0 - rename the key to "guidance"',
  },
];

const PROTOCOLS_KEY: RemovedKey = {
  path: ["protocols"],
  text: 'frontmatter "protocols:" was renamed in 0.9.2 - rename the key to "policies:"',
};

export const REMOVED_AGENT_KEYS: readonly RemovedKey[] = [PROTOCOLS_KEY];

export const REMOVED_SKILL_KEYS: readonly RemovedKey[] = [
  PROTOCOLS_KEY,
  {
    path: ["version"],
    text: 'top-level "version:" in skill frontmatter was moved in 0.10.0 - write it as "metadata: { version: <semver> }"',
  },
];

export const REMOVED_VALUES = {
  orchestratorFalse:
    '"orchestrator: false" was removed in 0.7.0 - delete the key; omitting "orchestrator" means direct execution',
  memberKindBot: (path: string) => `${path}: kind "bot" was renamed in 0.8.0 - write kind: agent`,
  soulFile: 'the agent file "SOUL.md" was renamed in 0.5.0 - rename it to PERSONA.md',
  protocolsDir: 'the "protocols/" directory was renamed in 0.9.2 - rename it to "policies/"',
} as const;

function tableFor(file: string): readonly RemovedKey[] {
  if (file === "daemon.yaml") return REMOVED_DAEMON_KEYS;
  if (file.startsWith("pipelines/")) return REMOVED_PIPELINE_KEYS;
  if (file.startsWith("agents/")) return REMOVED_AGENT_KEYS;
  if (file.startsWith("skills/")) return REMOVED_SKILL_KEYS;
  return [];
}

function matches(pattern: readonly string[], path: KeyPath): boolean {
  return (
    pattern.length === path.length && pattern.every((segment, i) => segment === "*" || segment === path[i])
  );
}

/** True when `path` is a removed key of `file`'s kind (its problem comes from `reportRemovedKeys`). */
export function isRemovedKey(file: string, path: KeyPath): boolean {
  return tableFor(file).some((entry) => matches(entry.path, path));
}

/** Reports every removed key present in `data`; returns how many it found. */
export function reportRemovedKeys(f: ConfigFile, data: unknown): number {
  let found = 0;
  for (const entry of tableFor(f.file)) {
    for (const path of presentPaths(data, entry.path)) {
      f.report(path, "removed_key", entry.text);
      found++;
    }
  }
  return found;
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function presentPaths(data: unknown, pattern: readonly string[]): string[][] {
  if (pattern.length === 0) return [[]];
  if (!isMapping(data)) return [];
  const [head, ...rest] = pattern as [string, ...string[]];
  const keys = head === "*" ? Object.keys(data) : Object.hasOwn(data, head) ? [head] : [];
  const out: string[][] = [];
  for (const key of keys) {
    for (const tail of presentPaths(data[key], rest)) out.push([key, ...tail]);
  }
  return out;
}
