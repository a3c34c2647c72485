import { checkPipelineTools, readAgentAccess, readPipelineTools } from "./agent-tools.ts";
import { readAuthorList } from "./authors.ts";
import { checkPublishingIdentities } from "./outputs.ts";
import { checkAgentAndSkills, readIdentity } from "./pipeline/agent-and-skills.ts";
import { readArgs } from "./pipeline/args.ts";
import { checkBudgetTargets, readBudget } from "./pipeline/budget.ts";
import { readCheckout } from "./pipeline/checkout.ts";
import { readConcurrency } from "./pipeline/concurrency.ts";
import type { PipelineContext, PipelineDraft } from "./pipeline/draft.ts";
import { readKnowledge } from "./pipeline/knowledge.ts";
import { readOrchestrator } from "./pipeline/orchestrator.ts";
import { checkOutputsAgainstSchema, OUTPUT_HANDLERS, readOutputs, readResult } from "./pipeline/outputs.ts";
import { checkSkillPrincipals, readPrincipals } from "./pipeline/principals.ts";
import { readReview } from "./pipeline/review.ts";
import { readEnv, readSetup } from "./pipeline/setup.ts";
import { readShadow } from "./pipeline/shadow.ts";
import { readTargets } from "./pipeline/targets.ts";
import { checkTriggerSources, readTrigger } from "./pipeline/trigger.ts";
import { inheritedVersion, readVersion } from "./pipeline/version.ts";
import { checkKeys, mapping, quote, str, type YamlMap } from "./read.ts";
import { reportRemovedKeys } from "./removed-keys.ts";
import { checkHostNetwork, checkSandboxReferences, readPipelineSandbox } from "./sandboxes.ts";
import { type ConfigFile, formatPath, type KeyPath } from "./source.ts";
import type { Pipeline } from "./types.ts";

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
  "checkout",
  "targets",
  "orchestrator",
  "knowledge",
  "sandbox",
  "tools",
  "agent_access",
  "concurrency",
  "budget",
  "authors",
  "review",
  "shadow",
  "record_answers",
];

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
  const checkout = readCheckout(f, root);
  const targets = readTargets(f, root);
  const orchestrator = readOrchestrator(f, root);
  const knowledge = readKnowledge(f, root);
  const sandbox = readPipelineSandbox(f, root, Object.keys(principals).length > 0);
  const tools = readPipelineTools(f, root);
  const agentAccess = readAgentAccess(f, root);
  const concurrency = readConcurrency(f, root);
  const budget = readBudget(f, root);
  const authors = readAuthorList(f, root, "authors", []);
  const review = readReview(f, root);
  const shadow = readShadow(f, root, name);
  const recordAnswers = readRecordAnswers(f, root);
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
    checkout,
    targets,
    ...(orchestrator ? { orchestrator } : {}),
    knowledge,
    ...(sandbox ? { sandbox } : {}),
    ...(tools.length ? { tools } : {}),
    ...(agentAccess ? { agentAccess } : {}),
    ...(concurrency ? { concurrency } : {}),
    ...(budget ? { budget } : {}),
    ...(authors ? { authors } : {}),
    ...(review ? { review } : {}),
    ...(shadow ? { shadow } : {}),
    ...(recordAnswers ? { recordAnswers } : {}),
  };
}

/** `record_answers`: the gateway keeps its live runs' model answers, for backtests that replay them. */
function readRecordAnswers(f: ConfigFile, root: YamlMap): boolean {
  if (root.record_answers === undefined || typeof root.record_answers === "boolean")
    return root.record_answers === true;
  f.report(
    ["record_answers"],
    "invalid_type",
    `"record_answers" must be true or false (got ${quote(root.record_answers)}) - true has the worker's gateway record the model answers of this pipeline's live runs, which svc eval backtest --replay-answers gives its candidate (docs/evals.md, "Replayed model answers")`,
  );
  return false;
}

function readRetainCheckout(f: ConfigFile, root: YamlMap): boolean {
  if (root.retain_checkout === undefined) return false;
  if (typeof root.retain_checkout === "boolean") return root.retain_checkout;
  f.report(["retain_checkout"], "invalid_type", '"retain_checkout" must be a boolean - write true or false');
  return false;
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
  checkBudgetTargets(f, draft, ctx.daemon.targets);
  checkTriggerSources(f, draft, ctx.daemon);
  checkPipelineTools(f, draft.tools ?? [], ctx.daemon.hostTools);
  if (draft.sandbox && ctx.daemon.sandboxes) checkSandboxReferences(f, draft.sandbox, ctx.daemon.sandboxes);
  // a pipeline without its own network takes daemon.yaml's, which is judged there
  checkHostNetwork(f, ["sandbox", "network"], draft.sandbox?.network, ctx.daemon.server.loopbackStar);
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
