// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} is the configuration substitution syntax, quoted literally
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../../shared/config/load.ts";

const INVALID = join(import.meta.dirname, "../../fixtures/config/invalid");
// every fixture's daemon.yaml reads its bearer secret from this variable
const ENV = { HOOK_TOKEN: "fixture-hook-token" };

/**
 * One fixture per rule: [directory, code, the exact message]. Each fixture is a valid base
 * configuration with one thing broken, so exactly one problem is expected.
 */
const CASES: [string, string, string][] = [
  [
    "agent-soul-file",
    "removed_key",
    'agents/bot/SOUL.md: the agent file "SOUL.md" was renamed in 0.5.0 - rename it to PERSONA.md',
  ],
  [
    "ask-empty-targets",
    "required",
    'daemon.yaml: "ask.targets" must not be empty - svc does not boot without it; add "ask: { targets: [<target name>, ...] }" naming targets of the top-level "targets:" map',
  ],
  [
    "ask-missing",
    "required",
    'daemon.yaml: "ask" is required - svc does not boot without it; add "ask: { targets: [<target name>, ...] }" naming targets of the top-level "targets:" map',
  ],
  [
    "ask-unknown-target",
    "unknown_target",
    'daemon.yaml: target "gpt" at "ask.targets[1]" is not defined - add it to the top-level "targets:" map (defined: local)',
  ],
  [
    "codehost-without-source",
    "webhook_source_missing",
    'pipelines/main.yaml: "trigger.codehost" has no codehost or gitlab source to receive its events - add "webhooks.sources.<name>: { verify: codehost, secret_ref: webhook/<name> }" to daemon.yaml (verify: gitlab for GitLab)',
  ],
  [
    "env-reserved",
    "env_reserved",
    'pipelines/main.yaml: env "SVC_TOKEN" is reserved - names starting SVC_ belong to svc; rename the variable',
  ],
  [
    "env-unset",
    "env_unset",
    'daemon.yaml: "webhooks.sources.hook.secret" uses ${UNSET_HOOK_TOKEN}, but the environment variable UNSET_HOOK_TOKEN is not set - export UNSET_HOOK_TOKEN before running svc',
  ],
  [
    "escalate-bare-channel",
    "invalid_type",
    'daemon.yaml: "queue.circuit_breaker.escalate.chat" must be an object { bot, channel } - a bare channel name is refused; write chat: { bot: <name from channels.chat.bots>, channel: <channel id> }',
  ],
  [
    "escalate-unknown-bot",
    "unknown_bot",
    'daemon.yaml: chat bot "ghost" at "queue.circuit_breaker.escalate.chat.bot" is not defined - add it to "channels.chat.bots" in daemon.yaml (defined: none)',
  ],
  [
    "host-tool-allow-options-type",
    "invalid_type",
    'daemon.yaml: "host_tools.lint.input.path.allow_options" must be a boolean (true or false)',
  ],
  [
    "host-tool-env-path",
    "env_reserved",
    'daemon.yaml: env "PATH" of "host_tools.lint" is set by svc for every host tool (the ingress\'s own PATH) - remove it from "host_tools.lint.env"',
  ],
  [
    "host-tool-mixed-arg",
    "invalid_value",
    'daemon.yaml: "host_tools.lint.args[1]" mixes $path with other text - a $name fills one whole argv element; give each reference an args entry of its own, e.g. ["--config-path", "$path"] instead of "--config-path=$path"',
  ],
  [
    "host-tool-relative-exec",
    "invalid_value",
    'daemon.yaml: "host_tools.lint.exec" must be an explicit absolute executable path without input references - pass inputs through "args"',
  ],
  [
    "host-tool-undeclared-input",
    "invalid_value",
    'daemon.yaml: "host_tools.lint.args[1]" references $file, which is not a field of "host_tools.lint.input" - declare it there or remove the reference',
  ],
  [
    "pipeline-unknown-tool",
    "unknown_tool",
    'pipelines/main.yaml: host tool "deploy" at "tools[1]" is not defined - add it to "host_tools" in daemon.yaml (defined: lint)',
  ],
  [
    "target-auth-failure-empty",
    "required",
    'daemon.yaml: "targets.local.auth_failure" needs "exit_codes", "stderr" or both',
  ],
  [
    "target-max-turns-zero",
    "invalid_value",
    'daemon.yaml: "targets.gpt.max_turns" must be between 1 and 1000 (got 0)',
  ],
  [
    "credential-env-reserved",
    "invalid_value",
    'daemon.yaml: env "SVC_KEY" is reserved - names starting SVC_ belong to svc; rename the variable',
  ],
  [
    "knowledge-delivery",
    "invalid_value",
    'pipelines/main.yaml: "knowledge.delivery" must be one of prompt, file, search, browse (got "email")',
  ],
  [
    "knowledge-method",
    "invalid_value",
    'pipelines/main.yaml: "knowledge.method" must be one of bm25, hybrid, none (got "vector")',
  ],
  [
    "knowledge-mode",
    "removed_key",
    'pipelines/main.yaml: "knowledge.mode" was removed in 0.5.1 - use "knowledge.method" and "knowledge.delivery": the local-engine mode became method: hybrid, delivery: prompt; mount became method: none, delivery: file; ambient became method: none, delivery: search; catalog became method: none, delivery: browse',
  ],
  [
    "loopback-star-string",
    "invalid_type",
    'daemon.yaml: "server.loopback_star" must be a boolean (true or false)',
  ],
  [
    "member-kind-bot",
    "removed_key",
    'members.yaml: members[0]: kind "bot" was renamed in 0.8.0 - write kind: agent',
  ],
  [
    "mount-refused",
    "mount_refused",
    'pipelines/main.yaml: "sandbox.mounts[0]" mounts a shared code-host CLI configuration directory, which is refused when "principals" are configured - remove the mount; the run acts through its principal',
  ],
  [
    "sandbox-engine-socket",
    "mount_refused",
    'pipelines/main.yaml: "sandbox.mounts[0]" mounts the container engine\'s socket /srv/engine/docker.sock (or a directory holding it), which would hand the run control of the host - remove the mount',
  ],
  [
    "sandbox-relative-mount",
    "invalid_value",
    'pipelines/main.yaml: "sandbox.mounts[0]" has the relative host path "cache" - write the absolute path of the host directory, e.g. /srv/cache:/cache',
  ],
  [
    "sandbox-unknown-variant",
    "unknown_image_variant",
    'pipelines/main.yaml: "sandbox.image" names the image variant "python", which "sandboxes.images" of daemon.yaml does not define - add "sandboxes.images.python: { build: <dir> }" or "{ pull: <reference> }", or use agent:default (defined: gpu)',
  ],
  [
    "orchestrator-assess",
    "removed_key",
    'pipelines/main.yaml: "orchestrator.assess" was renamed in 0.7.0 - rename the key to "guidance"',
  ],
  [
    "orchestrator-extra-key",
    "invalid_value",
    'pipelines/main.yaml: "orchestrator.budget" is not allowed - an orchestrator takes only strategy, guidance, targets, max_tasks, max_parallel, task_timeout, timeout; delete the key',
  ],
  [
    "orchestrator-budget",
    "invalid_value",
    'pipelines/main.yaml: "orchestrator.max_parallel" must be between 1 and 32 (got 0)',
  ],
  [
    "orchestrator-false",
    "removed_key",
    'pipelines/main.yaml: "orchestrator: false" was removed in 0.7.0 - delete the key; omitting "orchestrator" means direct execution',
  ],
  [
    "orchestrator-no-strategy",
    "required",
    'pipelines/main.yaml: "orchestrator.strategy" is required - write "strategy: { type: auto }"',
  ],
  [
    "orchestrator-tools",
    "removed_key",
    'pipelines/main.yaml: "orchestrator.tools" was removed in 0.9.0 - declare each tool under the top-level "host_tools" map of daemon.yaml',
  ],
  [
    "output-chat-no-config",
    "required",
    'pipelines/main.yaml: "outputs.post.config" is required for chat.message - write config: { bot: <name from channels.chat.bots>, channel: <channel id> }',
  ],
  [
    "output-chat-unknown-bot",
    "unknown_bot",
    'pipelines/main.yaml: chat bot "ghost" at "outputs.post.config.bot" is not defined - add it to "channels.chat.bots" in daemon.yaml (defined: none)',
  ],
  [
    "output-codehost-config",
    "output_config_refused",
    'pipelines/main.yaml: "outputs.note.config" is refused - the code-host handler codehost.comment takes no config block; delete it (sticky, progress and resolve_outdated are written beside handler)',
  ],
  [
    "output-schema-mismatch",
    "output_schema_mismatch",
    'pipelines/main.yaml: "result.schema.properties.review" must reference exactly the schema of handler codehost.review - write review: { $ref: svc://schemas/codehost/review/v1 }',
  ],
  [
    "output-unknown-handler",
    "unknown_handler",
    'pipelines/main.yaml: "outputs.post.handler" names unknown handler "codehost.upsert-comment" - use one of codehost.comment, codehost.review, codehost.review-comment-reply, codehost.review-replies, chat.message (upsert-comment, diff and issue-tracker outputs were removed)',
  ],
  [
    "outputs-without-schema",
    "outputs_without_schema",
    'pipelines/main.yaml: "outputs" is refused without "result.schema" - declare result.schema with one property per output key, each { $ref: <handler schema id> }',
  ],
  [
    "pipeline-output",
    "removed_key",
    'pipelines/main.yaml: "output" is removed; migrate to "result" and "outputs"',
  ],
  [
    "principal-required",
    "principal_required",
    'pipelines/main.yaml: skill "reviewing" requires the principal binding "pull-request-reviewer" for direct execution - add "principals: { pull-request-reviewer: <provider>.principal.<id> }" and "principal: pull-request-reviewer", or run it under an orchestrator',
  ],
  [
    "principal-unknown",
    "unknown_principal",
    'pipelines/main.yaml: "principal" names "pull-request-reviewer", which is not a binding of "principals" - add "principals: { pull-request-reviewer: <provider>.principal.<id> }" or name one of: pull-request-author',
  ],
  [
    "prompt-renamed",
    "removed_key",
    'pipelines/main.yaml: "prompt" was renamed in 0.5.0 - rename the key to "instructions"',
  ],
  [
    "protocols-dir",
    "removed_key",
    'protocols: the "protocols/" directory was renamed in 0.9.2 - rename it to "policies/"',
  ],
  [
    "protocols-frontmatter",
    "removed_key",
    'skills/solo/SKILL.md: frontmatter "protocols:" was renamed in 0.9.2 - rename the key to "policies:"',
  ],
  [
    "removed-agent-watch",
    "removed_key",
    'daemon.yaml: "agents.<name>.watch" was removed in 0.11.0 - use "trigger.tracker" on an agent session event in a pipeline',
  ],
  [
    "removed-ask-model",
    "removed_key",
    'daemon.yaml: "ask.model" was removed in 0.10.0 - define a named target in the top-level "targets:" map and list it in "ask.targets"',
  ],
  [
    "removed-ask-runtime",
    "removed_key",
    'daemon.yaml: "ask.runtime" was removed in 0.10.0 - define a named target in the top-level "targets:" map and list it in "ask.targets"',
  ],
  [
    "removed-ask-target",
    "removed_key",
    'daemon.yaml: "ask.target" was removed in 0.10.0 - use "ask.targets", an ordered list of names from the top-level "targets:" map',
  ],
  [
    "removed-defaults-output",
    "removed_key",
    'daemon.yaml: "defaults.output" is removed; migrate to "result" and "outputs" in each pipeline file',
  ],
  [
    "removed-host-tool-run",
    "removed_key",
    'daemon.yaml: "run" in a host tool was removed in 0.9.0 - declare "exec" (an explicit executable path) and "args" (a list, one argv element each, $name substitution, no shell)',
  ],
  [
    "lifecycle-unknown-key",
    "unknown_key",
    'daemon.yaml: unknown key "lifecycle.on_start" - "lifecycle" allows no keys: its only key, "lifecycle.retrieve", was removed in 0.3.7 (its tuning moved to "knowledge.retrieval"), and svc has no lifecycle hooks (a command to run before a run\'s agent is a pipeline "setup" step); delete it',
  ],
  [
    "removed-lifecycle-retrieve",
    "removed_key",
    'daemon.yaml: "lifecycle.retrieve" was removed in 0.3.7 - move its tuning to "knowledge.retrieval" (engine, topK, minScore, rewrite.targets)',
  ],
  [
    "removed-orchestrator-tools",
    "removed_key",
    'daemon.yaml: "orchestrator.tools" was removed in 0.9.0 - declare each tool under the top-level "host_tools" map with "exec" and "args"',
  ],
  [
    "removed-retention-days",
    "removed_key",
    'daemon.yaml: "workspaces.retentionDays" was removed in 0.7.0 - use "workspaces.checkoutRetentionDays" (default 30) and "workspaces.transcriptRetentionDays" (default 90)',
  ],
  [
    "removed-rewrite-target",
    "removed_key",
    'daemon.yaml: "knowledge.retrieval.rewrite.target" was removed in 0.10.0 - use "knowledge.retrieval.rewrite.targets", an ordered list of target names',
  ],
  [
    "removed-sandboxes-forward-env",
    "removed_key",
    'daemon.yaml: "sandboxes.forwardEnv" was removed in 0.6.1 - declare the variables in each pipeline\'s "env" manifest',
  ],
  [
    "removed-tracing",
    "removed_key",
    'daemon.yaml: the tracing sink block "tracing" was removed in 0.8.0 - delete it; svc writes one JSON log object per line and records lineage in the database (svc trace)',
  ],
  [
    "removed-webhooks-secret",
    "removed_key",
    'daemon.yaml: "webhooks.secret" was removed in 0.9.0 - move it to a codehost source: webhooks.sources.<name>: { verify: codehost, secret: ... }',
  ],
  [
    "removed-webhooks-tokens",
    "removed_key",
    'daemon.yaml: "webhooks.tokens" was removed in 0.9.0 - each webhooks.tokens.<name> becomes a bearer source: webhooks.sources.<name>: { verify: bearer, secret: ... }',
  ],
  [
    "removed-webhooks-tracker",
    "removed_key",
    'daemon.yaml: "webhooks.tracker" was removed in 0.9.0 - move the tracker secret to a tracker source: webhooks.sources.<name>: { verify: tracker, secret: ... }',
  ],
  [
    "retain-checkout",
    "invalid_type",
    'pipelines/main.yaml: "retain_checkout" must be a boolean - write true or false',
  ],
  [
    "rewrite-unknown-target",
    "unknown_target",
    'daemon.yaml: target "gpt" at "knowledge.retrieval.rewrite.targets[0]" is not defined - add it to the top-level "targets:" map (defined: local)',
  ],
  [
    "runtime-removed",
    "removed_key",
    'pipelines/main.yaml: "runtime" was removed in 0.6.5 - define a named target (runtime, model, credentials) in the top-level "targets:" map of daemon.yaml and list it in "targets: [<name>, ...]"',
  ],
  [
    "sandbox-forward-env",
    "removed_key",
    'pipelines/main.yaml: "sandbox.forwardEnv" was removed in 0.6.1 - declare the variables in the pipeline\'s "env" manifest',
  ],
  [
    "secret-and-secret-ref",
    "secret_source_conflict",
    'daemon.yaml: "webhooks.sources.hook" must set exactly one of "secret" and "secret_ref" - remove one of them',
  ],
  [
    "secret-ref-name",
    "secret_ref_name",
    'daemon.yaml: "webhooks.sources.hook.secret_ref" must be the full secret name "webhook/hook" - store it with "svc setup webhook hook --secret-env <ENV_NAME>"',
  ],
  [
    "setup-template",
    "setup_template",
    'pipelines/main.yaml: "setup[0].run" uses a "{{ ... }}" template placeholder, which is rejected - read the environment variables instead: $WORKTREE, $RUN_DIR, $SURFACE_DIR, $REPO, $SHA, $BRANCH, $EVENT_NAME, $EVENT_SOURCE, $PAYLOAD_JSON, $PREVIOUS_SHA, $BASE_SHA, $BASE_REF (other event fields from $PAYLOAD_JSON)',
  ],
  [
    "skill-top-level-version",
    "removed_key",
    'skills/solo/SKILL.md: top-level "version:" in skill frontmatter was moved in 0.10.0 - write it as "metadata: { version: <semver> }"',
  ],
  [
    "skill-version-invalid",
    "version_invalid",
    'skills/solo/SKILL.md: "metadata.version" must be a SemVer version such as 1.4.1 (got "three"); quote it if YAML reads it as a number',
  ],
  [
    "target-runtime",
    "invalid_value",
    'daemon.yaml: "targets.local.runtime" must be one of command, openai, claude-code, codex (got "anthropic")',
  ],
  [
    "target-timeout",
    "invalid_value",
    'daemon.yaml: "targets.local.timeout" must be a duration such as 500ms, 30s, 20m or 1h (got "20 minutes")',
  ],
  [
    "tracker-without-source",
    "webhook_source_missing",
    'pipelines/main.yaml: "trigger.tracker" has no tracker source to receive its events - add "webhooks.sources.<name>: { verify: tracker, secret_ref: webhook/<name> }" to daemon.yaml',
  ],
  [
    "trigger-manual",
    "removed_key",
    'pipelines/main.yaml: "trigger.manual" was removed - every pipeline is fireable by name, so delete the key',
  ],
  [
    "trusted-proxies-hostname",
    "invalid_value",
    'daemon.yaml: "server.trusted_proxies[1]" ("proxy.internal") must be an IP address or a CIDR range such as 10.0.0.5, 10.0.0.0/8 or fd00::/8 - host names are not resolved',
  ],
  [
    "unknown-agent",
    "unknown_agent",
    'pipelines/main.yaml: agent "ghost" is not defined - create agents/ghost/PERSONA.md or name one of: bot',
  ],
  [
    "unknown-policy-reference",
    "unknown_policy_reference",
    'agents/bot/PERSONA.md: policy "cite-lines" resolves to no file - create policies/cite-lines.md or remove it from "policies"',
  ],
  [
    "unknown-skill",
    "unknown_skill",
    'pipelines/main.yaml: skill "ghost" is not defined - create skills/ghost/SKILL.md or name one of: reviewing, solo',
  ],
  [
    "unknown-target",
    "unknown_target",
    'pipelines/main.yaml: target "gpt" at "targets[1]" is not defined - add it to the top-level "targets:" map of daemon.yaml (defined: local)',
  ],
  [
    "verify-enum",
    "invalid_value",
    'daemon.yaml: "webhooks.sources.hook.verify" must be one of bearer, codehost, tracker, gitlab (got "hmac")',
  ],
  [
    "version-invalid",
    "version_invalid",
    'pipelines/main.yaml: "version" must be a SemVer version such as 1.2.0 (got "1.0"); quote it if YAML reads it as a number',
  ],
  [
    "version-missing-agent-only",
    "version_missing",
    'pipelines/main.yaml: no single-skill version to inherit - declare an explicit "version" field',
  ],
  [
    "version-missing-companions",
    "version_missing",
    'pipelines/main.yaml: no single-skill version to inherit - declare an explicit "version" field',
  ],
  [
    "webhook-source-missing-off-loopback",
    "webhook_source_missing",
    'pipelines/main.yaml: webhook "deploy" has no source, so every request to /webhooks/deploy is refused with 401 - add "webhooks.sources.deploy: { verify: bearer, secret: ${ENV_NAME} }" to daemon.yaml (the daemon refuses to start: it binds 0.0.0.0, reachable off the machine)',
  ],
  [
    "webhook-verify-kind",
    "verify_kind_mismatch",
    'pipelines/main.yaml: webhook "hook" points at source "webhooks.sources.hook", whose verify is codehost, not bearer - a codehost source serves trigger.codehost; add a bearer source under another name or move the events to trigger.codehost',
  ],
  [
    "worker-heartbeat-too-short",
    "invalid_value",
    'daemon.yaml: "worker.heartbeat" must be between 1s and 10m (got "500ms") - a run is retried on another worker after 3 missed heartbeats',
  ],
  [
    "yaml-syntax",
    "yaml_syntax",
    "pipelines/main.yaml: invalid YAML: Flow sequence in block collection must be sufficiently indented and end with a ] - fix the syntax here",
  ],
  [
    "yaml-recursive-alias",
    "yaml_syntax",
    "pipelines/main.yaml: an alias refers to a node that contains it (a recursive alias) - remove the alias",
  ],
];

describe("invalid fixtures", () => {
  it.each(CASES)("%s fails with its exact message", async (fixture, code, message) => {
    const result = await loadConfig({ dir: join(INVALID, fixture), env: ENV });
    expect(result.ok).toBe(false);
    expect(result.problems.map((problem) => ({ code: problem.code, message: problem.message }))).toEqual([
      { code, message },
    ]);
    expect(result.problems[0]?.severity).toBe("error");
  });

  it("carries the contract's message forms character for character", () => {
    const messages = new Map(CASES.map(([fixture, , message]) => [fixture, message]));
    expect(messages.get("pipeline-output")).toBe(
      'pipelines/main.yaml: "output" is removed; migrate to "result" and "outputs"',
    );
    expect(messages.get("trigger-manual")).toBe(
      'pipelines/main.yaml: "trigger.manual" was removed - every pipeline is fireable by name, so delete the key',
    );
    expect(messages.get("version-missing-agent-only")).toBe(
      'pipelines/main.yaml: no single-skill version to inherit - declare an explicit "version" field',
    );
    expect(messages.get("version-invalid")).toContain('"version" must be a SemVer version');
    expect(messages.get("retain-checkout")).toContain(
      'pipelines/main.yaml: "retain_checkout" must be a boolean',
    );
    expect(messages.get("env-reserved")).toContain('env "SVC_TOKEN" is reserved');
  });

  it("lists all five broken pipeline files of one directory", async () => {
    const result = await loadConfig({ dir: join(INVALID, "five-broken-pipelines"), env: ENV });
    expect(result.ok).toBe(false);
    expect(result.problems.map((problem) => [problem.file, problem.code, problem.line])).toEqual([
      ["pipelines/a-output.yaml", "removed_key", 5],
      ["pipelines/b-manual.yaml", "removed_key", 6],
      ["pipelines/c-retain.yaml", "invalid_type", 5],
      ["pipelines/d-env.yaml", "env_reserved", 6],
      ["pipelines/e-version.yaml", "version_missing", 1],
    ]);
  });
});
