// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} is the configuration substitution syntax, quoted literally
import { DIAGNOSTIC_CODES } from "../diagnostics.ts";

/**
 * Stable codes of configuration problems. `svc config validate --json` and `svc doctor --json`
 * print them, and scripts filter on them, so a code never changes meaning once released.
 * Reference codes shared with run-time diagnostics reuse the diagnostics registry's names.
 */
export const CONFIG_CODES = {
  config_dir_missing: "the configuration directory does not exist",
  file_missing: "a required file is absent",
  file_unreadable: "a file exists but cannot be read",
  yaml_syntax: "a file is not valid YAML (or its frontmatter is not)",
  frontmatter_missing: "a Markdown file lacks the `---` frontmatter block",
  removed_key: "a key, value, file or directory removed or renamed by a release",
  unknown_key:
    "a key svc does not know (usually a typo); a warning, and the key is ignored, except where a key would change nothing the operator expects (under `lifecycle`, on a runtime it does not apply to): an error",
  required: "a required key is missing",
  invalid_type: "a value has the wrong type",
  invalid_value: "a value is outside the allowed values or format",
  env_unset: "a `${NAME}` substitution names an unset environment variable",
  secret_source_conflict: "not exactly one of `secret` and `secret_ref`",
  secret_ref_name: "a `secret_ref` is not the full stored-secret name it must be",
  verify_kind_mismatch: "a trigger points at a webhook source of another `verify` kind",
  webhook_source_missing: "a trigger has no webhook source to verify its requests",
  unknown_target: "a target name is not in the top-level `targets:` map",
  unknown_tool: "a pipeline's `tools` names no `host_tools` entry",
  unknown_agent: "an agent name has no `agents/<name>/PERSONA.md`",
  unknown_skill: "a skill name has no `skills/<name>/SKILL.md`",
  unknown_bot: "a chat bot name is not in `channels.chat.bots`",
  unknown_handler: "an output handler id is not a known handler",
  unknown_principal:
    "a `principal` names no binding of `principals`, or a `codehost.principal.<id>` binding names no entry of `codehost.principals`",
  codehost_identity_missing: "a code-host output handler is used with no `codehost` identity to post as",
  principal_required: "a skill requiring a principal runs directly without that binding",
  unknown_policy_reference: DIAGNOSTIC_CODES.unknown_policy_reference,
  version_missing: "a pipeline has no version and none to inherit",
  version_invalid: "a version is not SemVer",
  output_schema_mismatch: "`result.schema` does not reference the schema of the bound handler",
  outputs_without_schema: "`outputs` is set without `result.schema`",
  output_config_refused: "a handler of the code-host family was given a `config` block",
  output_option_refused:
    "`sticky`, `progress`, `resolve_outdated` or `target` on a handler that does not take it, or `progress` without `sticky`",
  env_reserved: "a pipeline `env` name starts with the reserved `SVC_` prefix",
  setup_template: "a setup step uses a `{{ ... }}` placeholder",
  mount_refused:
    "a sandbox mount shares a code-host CLI configuration directory while principals are set, or the container engine's socket",
  unknown_image_variant:
    "a `sandbox.image` names an `agent:<variant>` that `sandboxes.images` does not define",
  unknown_scope: "a token scope outside the vocabulary: the token is refused everywhere",
  duplicate_name: "two entries share a name that must be unique",
  name_mismatch: "a frontmatter `name` differs from the file or directory name",
  value_clamped: "a value was raised to the minimum another setting requires",
  trigger_filter_refused:
    "a pull request filter (`branches`, `paths`, `labels`, `drafts` …) of `trigger.codehost` where it cannot apply: beside events other than pull_request's, or under `codehost.kind: gitlab`",
} as const;

export type ConfigCode = keyof typeof CONFIG_CODES;

/** Codes `svc doctor` adds for what it checks beyond the configuration files. */
export const DOCTOR_CODES = {
  instance_key_missing: "stored secrets are referenced but the instance key file is absent",
  instance_key_unreadable: "the instance key file exists but cannot be read",
  database_unreachable: "SVC_DATABASE_URL is set but the server does not answer",
  database_too_old: "the database server is older than PostgreSQL 15",
  retrieval_tool_floor: "knowledge sources exist but qmd is missing or older than 2.8.3",
  embedder_missing: "the vector engine's host embedder runner is not on the PATH",
  agent_cli_missing:
    "a claude-code or codex target's CLI is not installed where the target looks for it: on this host, or (`svc doctor --deep`) in the image of a sandboxed pipeline that runs the target",
  agent_cli_version: "an agent CLI's version differs from the pin in deploy/images/agent/versions.json",
  codehost_app_refused:
    "a GitHub App of daemon.yaml cannot sign in: its key does not parse, or GitHub refuses it",
  repo_unreadable:
    "a configured repository refuses the identity runs fetch it as (the default code-host identity, or anonymous)",
  repo_unreachable: "a configured repository's host does not answer git (network, DNS, timeout)",
  repo_cache_full: "the worker host's repository cache holds more than `workspaces.repo_cache.max_size`",
  gitlab_token_invalid: "GitLab refuses a token of `codehost` (401): unknown, revoked or expired",
  gitlab_token_scope:
    "a GitLab token of `codehost` lacks the api scope svc posts notes and discussions with (read_api only reads)",
  gitlab_token_expiring: "a GitLab token of `codehost` expires within 14 days",
  gitlab_unreachable:
    "`codehost.api_url` of a `kind: gitlab` code host does not answer, or is not GitLab's API v4",
  gitlab_project_unreachable:
    "a project of `repos` is not visible to the user of `codehost.token` on GitLab (404), or refused to it",
  gitlab_access_too_low:
    "the user of `codehost.token` is below Developer (30) on a project of `repos`: it cannot post notes and discussions (below Reporter, 20, it cannot read the repository)",
  app_not_installed:
    "`svc doctor --deep`: the GitHub App of `codehost.app` is not installed on a repository of `repos` (or, with no `repos`, anywhere)",
  app_permission_missing:
    "`svc doctor --deep`: an installation of the GitHub App lacks a permission svc needs (contents read, pull_requests write, issues write, checks read, metadata read), or has it at a lower level",
  app_event_missing:
    "`svc doctor --deep`: an installation of the GitHub App is not subscribed to an event svc needs (pull_request, issue_comment, pull_request_review_comment, push)",
  webhook_no_delivery:
    "`svc doctor --deep`: GitHub lists no delivery to the App's webhook (`GET /app/hook/deliveries`): no Webhook URL, or nothing sent yet",
  webhook_delivery_failed:
    "`svc doctor --deep`: GitHub's last delivery to the App's webhook did not get a 2xx answer (unreachable URL, refused signature, wrong path)",
  webhook_not_recorded:
    "`svc doctor --deep`: GitHub's last delivery was answered 2xx, but svc holds no trigger with its delivery id: the Webhook URL reaches another server",
  webhook_record_unread:
    "`svc doctor --deep`: GitHub's last delivery was answered 2xx, but svc's own record could not be read (no SVC_DATABASE_URL and no daemon answering)",
  sandbox_engine_unreachable: DIAGNOSTIC_CODES.sandbox_engine_unreachable,
  sandbox_image_missing: DIAGNOSTIC_CODES.sandbox_image_missing,
  target_key_refused:
    "`svc doctor --deep`: a target's model API refused a credential (401, 403, revoked or expired) on a one-token request through svc's gateway",
  target_request_failed:
    "`svc doctor --deep`: a target's one-token request through svc's gateway failed for another reason than the key (no answer, rate limit, overload, unknown model)",
} as const;

export type DoctorCode = keyof typeof DOCTOR_CODES;
