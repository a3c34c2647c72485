import { checkPipelineTools, readAgentAccess, readPipelineTools } from "./agent-tools.ts";
import { readChatTarget } from "./daemon/channels.ts";
import type { DeclaredNames } from "./daemon/declared-names.ts";
import { offLoopback } from "./daemon/server.ts";
import { readStringMap } from "./env-map.ts";
import { checkPublishingIdentities } from "./outputs.ts";
import {
  bool,
  checkKeys,
  duration,
  int,
  isMapping,
  mapping,
  oneOf,
  quote,
  str,
  strList,
  type YamlMap,
} from "./read.ts";
import { REMOVED_VALUES, reportRemovedKeys } from "./removed-keys.ts";
import { checkSandboxReferences, readPipelineSandbox } from "./sandboxes.ts";
import { readSchedules } from "./schedule.ts";
import { isSemVer } from "./semver.ts";
import { type ConfigFile, formatPath, type KeyPath } from "./source.ts";
import type {
  DaemonSettings,
  EventMatcher,
  OutputBinding,
  Pipeline,
  PipelineArg,
  PipelineTrigger,
  Skill,
} from "./types.ts";

/** Output handlers and the schema id `result.schema.properties.<key>.$ref` must name exactly. */
export const OUTPUT_HANDLERS: Readonly<Record<string, { schema: string; family: "codehost" | "chat" }>> = {
  "codehost.comment": { schema: "svc://schemas/codehost/comment/v1", family: "codehost" },
  "codehost.review": { schema: "svc://schemas/codehost/review/v1", family: "codehost" },
  "codehost.review-comment-reply": {
    schema: "svc://schemas/codehost/review-comment-reply/v1",
    family: "codehost",
  },
  "codehost.review-replies": { schema: "svc://schemas/codehost/review-replies/v1", family: "codehost" },
  "chat.message": { schema: "svc://schemas/chat/message/v1", family: "chat" },
};

export const KNOWLEDGE_METHODS = ["bm25", "hybrid", "none"] as const;
export const KNOWLEDGE_DELIVERIES = ["prompt", "file", "search", "browse"] as const;
export const SETUP_ENVIRONMENT = [
  "WORKTREE",
  "RUN_DIR",
  "SURFACE_DIR",
  "REPO",
  "SHA",
  "BRANCH",
  "EVENT_NAME",
  "EVENT_SOURCE",
  "PAYLOAD_JSON",
] as const;

const PIPELINE_KEYS = [
  "version",
  "agent",
  "skill",
  "companions",
  "instructions",
  "trigger",
  "args",
  "principals",
  "principal",
  "result",
  "outputs",
  "env",
  "setup",
  "retain_checkout",
  "targets",
  "orchestrator",
  "knowledge",
  "sandbox",
  "tools",
  "agent_access",
];
const PRINCIPAL_ID = /^[A-Za-z0-9_-]+\.principal\.[A-Za-z0-9_.:-]+$/;
const REPO_NAME = /^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/;
const TEMPLATE = /\{\{[\s\S]*?\}\}/;

/** What one pipeline file says on its own; references to other files are checked by `resolvePipeline`. */
export interface PipelineDraft extends Omit<Pipeline, "version"> {
  version?: string;
  /** true when the file sets `version`, even to an invalid value (already reported) */
  versionDeclared: boolean;
}

export function readPipeline(f: ConfigFile, name: string, data: unknown): PipelineDraft | undefined {
  if (data === null || data === undefined) {
    f.report(
      [],
      "required",
      'is empty - a pipeline needs at least "agent" or "skill", "instructions" and "targets"',
    );
    return undefined;
  }
  const root = mapping(
    f,
    data,
    [],
    ' - a pipeline file holds keys such as "agent", "instructions" and "targets"',
  );
  if (!root) return undefined;
  reportRemovedKeys(f, root);
  checkKeys(f, root, [], PIPELINE_KEYS);

  const version = readVersion(f, root);
  const { agent, skill, companions } = readIdentity(f, root);
  const instructions =
    str(f, root, "instructions", [], {
      required: true,
      hint: " - give the instruction text the agent receives",
    }) ?? "";
  const args = readArgs(f, root);
  const trigger = readTrigger(f, root, name, args);
  const principals = readPrincipals(f, root);
  const principal = str(f, root, "principal", []);
  if (principal && !principals[principal]) {
    f.report(
      ["principal"],
      "unknown_principal",
      `"principal" names ${quote(principal)}, which is not a binding of "principals" - add "principals: { ${principal}: <provider>.principal.<id> }" or name one of: ${Object.keys(principals).join(", ") || "none defined"}`,
    );
  }
  const result = readResult(f, root);
  const outputs = readOutputs(f, root);
  const env = readEnv(f, root);
  const setup = readSetup(f, root);
  const retainCheckout = readRetainCheckout(f, root);
  const targets = readTargets(f, root);
  const orchestrator = readOrchestrator(f, root);
  const knowledge = readKnowledge(f, root);
  const sandbox = readPipelineSandbox(f, root, Object.keys(principals).length > 0);
  const tools = readPipelineTools(f, root);
  const agentAccess = readAgentAccess(f, root);
  if (sandbox && tools.length > 0)
    f.report(
      ["tools"],
      "invalid_value",
      '"tools" gives a sandboxed pipeline nothing - a sandboxed run\'s token is refused for host tools whatever its scopes; remove "tools" or "sandbox"',
      "warning",
    );

  // returned even when something above was wrong, so references are still checked and reported
  return {
    name,
    file: f.file,
    versionDeclared: root.version !== undefined && root.version !== null,
    ...(version ? { version } : {}),
    ...(agent ? { agent } : {}),
    ...(skill ? { skill } : {}),
    companions,
    instructions,
    trigger,
    args,
    principals,
    ...(principal ? { principal } : {}),
    ...(result ? { result } : {}),
    outputs,
    env,
    setup,
    retainCheckout,
    targets,
    ...(orchestrator ? { orchestrator } : {}),
    knowledge,
    ...(sandbox ? { sandbox } : {}),
    ...(tools.length ? { tools } : {}),
    ...(agentAccess ? { agentAccess } : {}),
  };
}

function readVersion(f: ConfigFile, root: YamlMap): string | undefined {
  if (root.version === undefined || root.version === null) return undefined;
  if (typeof root.version === "string" && isSemVer(root.version)) return root.version;
  f.report(
    ["version"],
    "version_invalid",
    `"version" must be a SemVer version such as 1.2.0 (got ${quote(root.version)}); quote it if YAML reads it as a number`,
  );
  return undefined;
}

/** Who runs: an agent, or a skill with its companions (at least one of agent and skill). */
function readIdentity(
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

function readRetainCheckout(f: ConfigFile, root: YamlMap): boolean {
  if (root.retain_checkout === undefined) return false;
  if (typeof root.retain_checkout === "boolean") return root.retain_checkout;
  f.report(["retain_checkout"], "invalid_type", '"retain_checkout" must be a boolean - write true or false');
  return false;
}

function readTargets(f: ConfigFile, root: YamlMap): string[] {
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

function readTrigger(
  f: ConfigFile,
  root: YamlMap,
  name: string,
  args: Record<string, PipelineArg>,
): PipelineTrigger | null {
  if (root.trigger === undefined || root.trigger === null) return null;
  const raw = mapping(f, root.trigger, ["trigger"], " with keys webhook, codehost, tracker or schedule");
  if (!raw) return null;
  checkKeys(f, raw, ["trigger"], ["webhook", "codehost", "tracker", "schedule"]);
  return {
    webhook: strList(f, raw, "webhook", ["trigger"]) ?? [],
    codehost: readMatchers(f, raw, "codehost"),
    tracker: readMatchers(f, raw, "tracker"),
    schedule: readSchedules(f, raw, name, args),
  };
}

/** `[event, ...]`, `{ events, repos }`, or a list mixing event names and such objects. */
function readMatchers(f: ConfigFile, raw: YamlMap, key: "codehost" | "tracker"): EventMatcher[] {
  const value = raw[key];
  const path = ["trigger", key];
  if (value === undefined || value === null) return [];
  const shape = `"trigger.${key}" must be a list of event names (e.g. [pull_request.opened]) or { events: [...], repos: [owner/name, ...] }`;
  const items = Array.isArray(value) ? value : [value];
  const matchers: EventMatcher[] = [];
  const bare: string[] = [];
  items.forEach((item, index) => {
    const itemPath: KeyPath = Array.isArray(value) ? [...path, index] : path;
    if (typeof item === "string" && item.trim() !== "") {
      bare.push(item);
    } else if (isMapping(item)) {
      checkKeys(f, item, itemPath, ["events", "repos"]);
      const events = strList(f, item, "events", itemPath, {
        required: true,
        hint: ", e.g. events: [pull_request.opened]",
      });
      const repos = strList(f, item, "repos", itemPath) ?? [];
      for (const [i, repo] of repos.entries()) {
        if (!REPO_NAME.test(repo))
          f.report(
            [...itemPath, "repos", i],
            "invalid_value",
            `repository ${quote(repo)} must be written <owner>/<name>`,
          );
      }
      if (events?.length) matchers.push({ events, repos });
      else if (events)
        f.report(
          [...itemPath, "events"],
          "required",
          `"${formatPath([...itemPath, "events"])}" must not be empty`,
        );
    } else {
      f.report(itemPath, "invalid_type", shape);
    }
  });
  if (bare.length) matchers.unshift({ events: bare, repos: [] });
  return matchers;
}

function readArgs(f: ConfigFile, root: YamlMap): Record<string, PipelineArg> {
  const raw = root.args == null ? {} : mapping(f, root.args, ["args"], " of name to { type, required }");
  const args: Record<string, PipelineArg> = {};
  for (const [name, spec] of Object.entries(raw ?? {})) {
    const path = ["args", name];
    const entry = mapping(f, spec, path, " such as { type: string, required: true }");
    if (!entry) continue;
    checkKeys(f, entry, path, ["type", "required", "description"]);
    const type = oneOf(f, entry, "type", path, ["string", "number", "boolean"] as const, { required: true });
    const required = bool(f, entry, "required", path) ?? false;
    if (type) args[name] = { type, required };
  }
  return args;
}

function readPrincipals(f: ConfigFile, root: YamlMap): Record<string, string> {
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

function readResult(f: ConfigFile, root: YamlMap): { schema: Record<string, unknown> } | undefined {
  if (root.result == null) return undefined;
  const raw = mapping(f, root.result, ["result"], " holding schema");
  if (!raw) return undefined;
  checkKeys(f, raw, ["result"], ["schema"]);
  if (raw.schema == null) {
    f.report(
      ["result", "schema"],
      "required",
      '"result.schema" is required - declare the complete structured result as a JSON schema object',
    );
    return undefined;
  }
  const schema = mapping(f, raw.schema, ["result", "schema"], " (a JSON schema object)");
  return schema ? { schema } : undefined;
}

function readOutputs(f: ConfigFile, root: YamlMap): Record<string, OutputBinding> {
  const raw =
    root.outputs == null ? {} : mapping(f, root.outputs, ["outputs"], " of result key to { handler }");
  const outputs: Record<string, OutputBinding> = {};
  for (const [key, spec] of Object.entries(raw ?? {})) {
    const path = ["outputs", key];
    const entry = mapping(f, spec, path, " such as { handler: codehost.review }");
    if (!entry) continue;
    checkKeys(f, entry, path, ["handler", "config"]);
    const handler = str(f, entry, "handler", path, {
      required: true,
      hint: ` - one of ${Object.keys(OUTPUT_HANDLERS).join(", ")}`,
    });
    if (!handler) continue;
    const known = OUTPUT_HANDLERS[handler];
    if (!known) {
      f.report(
        [...path, "handler"],
        "unknown_handler",
        `"outputs.${key}.handler" names unknown handler ${quote(handler)} - use one of ${Object.keys(OUTPUT_HANDLERS).join(", ")} (upsert-comment, diff and issue-tracker outputs were removed)`,
      );
      continue;
    }
    if (known.family === "codehost") {
      if (entry.config !== undefined) {
        f.report(
          [...path, "config"],
          "output_config_refused",
          `"outputs.${key}.config" is refused - the code-host handler ${handler} takes no config block; delete it`,
        );
        continue;
      }
      outputs[key] = { handler };
    } else {
      if (entry.config == null) {
        f.report(
          [...path, "config"],
          "required",
          `"outputs.${key}.config" is required for ${handler} - write config: { bot: <name from channels.chat.bots>, channel: <channel id> }`,
        );
        continue;
      }
      const config = mapping(f, entry.config, [...path, "config"], " such as { bot, channel }");
      // bots are checked against daemon.yaml in resolvePipeline
      const chat = config && readChatTarget(f, config, [...path, "config"], undefined);
      if (chat) outputs[key] = { handler, config: chat };
    }
  }
  return outputs;
}

function readEnv(f: ConfigFile, root: YamlMap): Record<string, string> {
  const env = readStringMap(f, root, "env", []) ?? {};
  for (const name of Object.keys(env)) {
    if (name.startsWith("SVC_")) {
      f.report(
        ["env", name],
        "env_reserved",
        `env "${name}" is reserved - names starting SVC_ belong to svc; rename the variable`,
      );
    }
  }
  return env;
}

function readSetup(f: ConfigFile, root: YamlMap): { run: string }[] {
  if (root.setup == null) return [];
  if (!Array.isArray(root.setup)) {
    f.report(["setup"], "invalid_type", '"setup" must be a list of steps, each { run: <shell command> }');
    return [];
  }
  const steps: { run: string }[] = [];
  root.setup.forEach((item, index) => {
    const path = ["setup", index];
    const step = mapping(f, item, path, " such as { run: <shell command> }");
    if (!step) return;
    checkKeys(f, step, path, ["run"]);
    const run = str(f, step, "run", path, { required: true });
    if (run === undefined) return;
    if (TEMPLATE.test(run)) {
      f.report(
        [...path, "run"],
        "setup_template",
        `"setup[${index}].run" uses a "{{ ... }}" template placeholder, which is rejected - read the environment variables instead: ${SETUP_ENVIRONMENT.map((name) => `$${name}`).join(", ")} (other event fields from $PAYLOAD_JSON)`,
      );
      return;
    }
    steps.push({ run });
  });
  return steps;
}

export const ORCHESTRATOR_DEFAULTS = { maxTasks: 8, maxParallel: 2 } as const;
const ORCHESTRATOR_KEYS = [
  "strategy",
  "guidance",
  "targets",
  "max_tasks",
  "max_parallel",
  "task_timeout",
  "timeout",
];

function readOrchestrator(f: ConfigFile, root: YamlMap): Pipeline["orchestrator"] {
  const value = root.orchestrator;
  if (value === undefined || value === null) return undefined;
  if (value === false) {
    f.report(["orchestrator"], "removed_key", REMOVED_VALUES.orchestratorFalse);
    return undefined;
  }
  const raw = mapping(f, value, ["orchestrator"], " such as { strategy: { type: auto } }");
  if (!raw) return undefined;
  for (const key of Object.keys(raw)) {
    // `tools` and `assess` are reported as removed keys (removed-keys.ts)
    if ([...ORCHESTRATOR_KEYS, "tools", "assess"].includes(key)) continue;
    f.report(
      ["orchestrator", key],
      "invalid_value",
      `"orchestrator.${key}" is not allowed - an orchestrator takes only ${ORCHESTRATOR_KEYS.join(", ")}; delete the key`,
    );
  }
  const strategy = raw.strategy;
  const strategyHint = ' - write "strategy: { type: auto }"';
  if (strategy == null) {
    f.report(["orchestrator", "strategy"], "required", `"orchestrator.strategy" is required${strategyHint}`);
  } else if (!isMapping(strategy) || strategy.type !== "auto" || Object.keys(strategy).length !== 1) {
    f.report(
      ["orchestrator", "strategy"],
      "invalid_value",
      `"orchestrator.strategy" must be { type: auto }${strategyHint}`,
    );
  }
  const path = ["orchestrator"];
  const guidance = str(f, raw, "guidance", path);
  const targets = strList(f, raw, "targets", path) ?? [];
  const maxTasks = int(f, raw, "max_tasks", path, { min: 1, max: 100 }) ?? ORCHESTRATOR_DEFAULTS.maxTasks;
  const maxParallel =
    int(f, raw, "max_parallel", path, { min: 1, max: 32 }) ?? ORCHESTRATOR_DEFAULTS.maxParallel;
  const taskTimeoutMs = raw.task_timeout == null ? undefined : duration(f, raw, "task_timeout", path, 0);
  const timeoutMs = raw.timeout == null ? undefined : duration(f, raw, "timeout", path, 0);
  return {
    strategy: { type: "auto" },
    ...(guidance ? { guidance } : {}),
    targets,
    maxTasks,
    maxParallel,
    ...(taskTimeoutMs ? { taskTimeoutMs } : {}),
    ...(timeoutMs ? { timeoutMs } : {}),
  };
}

function readKnowledge(f: ConfigFile, root: YamlMap): Pipeline["knowledge"] {
  const raw =
    root.knowledge == null
      ? {}
      : (mapping(f, root.knowledge, ["knowledge"], " such as { method: hybrid }") ?? {});
  checkKeys(f, raw, ["knowledge"], ["method", "delivery"]);
  const method = oneOf(f, raw, "method", ["knowledge"], KNOWLEDGE_METHODS) ?? "hybrid";
  const delivery = oneOf(f, raw, "delivery", ["knowledge"], KNOWLEDGE_DELIVERIES);
  return delivery ? { method, delivery } : { method };
}

/** What a pipeline's references are checked against. */
export interface PipelineContext {
  daemon: DaemonSettings;
  /** names daemon.yaml declares, including entries that failed validation */
  declared: DeclaredNames;
  agents: ReadonlySet<string>;
  skills: Readonly<Record<string, Skill>>;
  /** false when daemon.yaml itself could not be read: references into it are then not judged */
  daemonKnown: boolean;
}

/** Checks references into daemon.yaml, agents and skills; fixes the version. */
export function resolvePipeline(
  f: ConfigFile,
  draft: PipelineDraft,
  ctx: PipelineContext,
): Pipeline | undefined {
  const before = f.errorCount;
  const closure = checkAgentAndSkills(f, draft, ctx);
  const version = draft.version ?? inheritedVersion(f, draft, ctx, closure, before);
  // direct execution runs the skill as-is, so it must act as the principal the skill requires
  if (!draft.orchestrator) checkSkillPrincipals(f, draft, ctx, closure);
  if (ctx.daemonKnown) {
    checkDaemonReferences(f, draft, ctx);
    checkPublishingIdentities(f, draft, ctx.daemon.codehost, (handler) => OUTPUT_HANDLERS[handler]?.family);
  }
  checkOutputsAgainstSchema(f, draft);

  if (f.errorCount > before || version === undefined) return undefined;
  const { versionDeclared: _declared, ...pipeline } = draft;
  return { ...pipeline, version };
}

/** The agent and every skill the pipeline names must exist; returns the skills (governing first). */
function checkAgentAndSkills(f: ConfigFile, draft: PipelineDraft, ctx: PipelineContext): string[] {
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

/**
 * A pipeline without a "version" inherits the version of its single skill. Nothing is reported when
 * an invalid "version" was declared (readPipeline reported it), nor when the single skill is unknown.
 */
function inheritedVersion(
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

function checkSkillPrincipals(
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

/** What the pipeline names in daemon.yaml: targets, webhook sources, host tools, chat bots. */
function checkDaemonReferences(f: ConfigFile, draft: PipelineDraft, ctx: PipelineContext): void {
  const checkTargets = (names: string[], path: KeyPath) => {
    names.forEach((name, index) => {
      if (ctx.declared.targets.has(name)) return;
      f.report(
        [...path, index],
        "unknown_target",
        `target ${quote(name)} at "${formatPath([...path, index])}" is not defined - add it to the top-level "targets:" map of daemon.yaml (defined: ${[...ctx.declared.targets].join(", ") || "none"})`,
      );
    });
  };
  checkTargets(draft.targets, ["targets"]);
  if (draft.orchestrator) checkTargets(draft.orchestrator.targets, ["orchestrator", "targets"]);
  checkTriggerSources(f, draft, ctx.daemon);
  checkPipelineTools(f, draft.tools ?? [], ctx.daemon.hostTools);
  if (draft.sandbox && ctx.daemon.sandboxes) checkSandboxReferences(f, draft.sandbox, ctx.daemon.sandboxes);
  for (const [key, binding] of Object.entries(draft.outputs)) {
    if (binding.config && !ctx.declared.bots.has(binding.config.bot)) {
      f.report(
        ["outputs", key, "config", "bot"],
        "unknown_bot",
        `chat bot ${quote(binding.config.bot)} at "outputs.${key}.config.bot" is not defined - add it to "channels.chat.bots" in daemon.yaml (defined: ${[...ctx.declared.bots].join(", ") || "none"})`,
      );
    }
  }
}

function checkTriggerSources(f: ConfigFile, draft: PipelineDraft, daemon: DaemonSettings): void {
  const trigger = draft.trigger;
  if (!trigger) return;
  const sources = Object.values(daemon.webhooks.sources);
  trigger.webhook.forEach((name, index) => {
    const source = daemon.webhooks.sources[name];
    const path = ["trigger", "webhook", index];
    if (source && source.verify !== "bearer") {
      f.report(
        path,
        "verify_kind_mismatch",
        `webhook ${quote(name)} points at source "webhooks.sources.${name}", whose verify is ${source.verify}, not bearer - a ${source.verify} source serves trigger.${source.verify}; add a bearer source under another name or move the events to trigger.${source.verify}`,
      );
    } else if (!source) {
      const offMachine = offLoopback(daemon);
      f.report(
        path,
        "webhook_source_missing",
        `webhook ${quote(name)} has no source, so every request to /webhooks/${name} is refused with 401 - add "webhooks.sources.${name}: { verify: bearer, secret: \${ENV_NAME} }" to daemon.yaml${offMachine ? ` (the daemon refuses to start: it binds ${daemon.server.host}, reachable off the machine)` : ""}`,
        offMachine ? "error" : "warning",
      );
    }
  });
  for (const kind of ["codehost", "tracker"] as const) {
    if (trigger[kind].length === 0 || sources.some((source) => source.verify === kind)) continue;
    f.report(
      ["trigger", kind],
      "webhook_source_missing",
      `"trigger.${kind}" has no ${kind} source to receive its events - add "webhooks.sources.<name>: { verify: ${kind}, secret_ref: webhook/<name> }" to daemon.yaml`,
    );
  }
}

function checkOutputsAgainstSchema(f: ConfigFile, draft: PipelineDraft): void {
  const keys = Object.keys(draft.outputs);
  if (keys.length === 0) return;
  if (!draft.result) {
    f.report(
      ["outputs"],
      "outputs_without_schema",
      '"outputs" is refused without "result.schema" - declare result.schema with one property per output key, each { $ref: <handler schema id> }',
    );
    return;
  }
  const properties = draft.result.schema.properties;
  for (const key of keys) {
    const handler = draft.outputs[key]!.handler;
    const expected = OUTPUT_HANDLERS[handler]!.schema;
    const property = isMapping(properties) ? properties[key] : undefined;
    const ref = isMapping(property) ? property.$ref : undefined;
    if (ref === expected && isMapping(property) && Object.keys(property).length === 1) continue;
    f.report(
      ["result", "schema", "properties", key],
      "output_schema_mismatch",
      `"result.schema.properties.${key}" must reference exactly the schema of handler ${handler} - write ${key}: { $ref: ${expected} }`,
    );
  }
}
