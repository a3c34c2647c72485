import { mkdir, realpath, rm } from "node:fs/promises";
import { join } from "node:path";
import { readRegularFile, writeFreshFile } from "../../../shared/no-follow.ts";
import { promptText } from "../../run/prompt.ts";
import { lastJsonObject } from "../../run/result-check.ts";
import { type AgentCli, type CliContext, type CliReport, countCalls, jsonLines } from "./cli.ts";
import { codexInstall, codexPermissions } from "./confinement.ts";
import { standaloneSchema } from "./result-schema.ts";

export const DEFAULT_BASE_URL = "https://api.openai.com/v1";
/** The provider's `env_key`: the variable Codex reads the credential from. */
const KEY_VARIABLE = "OPENAI_API_KEY";
/** Codex's legacy sandbox for its shell and file tools inside svc's container, per `agent_access`. */
const SANDBOX = { read: "read-only", edit: "workspace-write" };

/** A TOML basic string: JSON's escapes are TOML's. */
const toml = (value: string) => JSON.stringify(value);

/**
 * Codex headless (`codex exec --json`): the prompt on stdin, a private CODEX_HOME, the model
 * provider and svc's MCP server given as `-c` overrides (no file of the host's is read). The
 * provider is the worker's gateway; the attempt's gateway token (never the credential) reaches
 * Codex as the provider's `env_key` and the run token as the MCP server's
 * `bearer_token_env_var` (SVC_MCP_TOKEN): neither is on the command line. svc's server, and only
 * it, is pre-approved (`default_tools_approval_mode = "approve"`), because `exec` refuses any
 * call that needs approval. The commands Codex runs inherit neither token (shellEnvironment). The
 * result comes from `--output-schema` / `--output-last-message`.
 * On the host its commands run under svc's permission profile (confinement.ts), which shows them
 * the worktree and the system's base files only; in svc's container, under `--sandbox`.
 */
export const codex: AgentCli = {
  command: "codex",

  async launch(context: CliContext) {
    const { target, pipeline, access, agentDir } = context;
    const codexHome = join(context.home, ".codex");
    await mkdir(codexHome, { recursive: true, mode: 0o700 });
    const lastMessage = lastMessageFile(agentDir);
    await rm(lastMessage, { force: true });
    const provider = [
      `name="svc"`,
      // the worker's gateway, which forwards to the target's base_url with the credential
      `base_url=${toml(context.baseUrl)}`,
      `wire_api="responses"`,
      `env_key="${KEY_VARIABLE}"`,
      // a refused or throttled request ends the run at once: the gateway parks the credential and svc fails over
      "request_max_retries=0",
      "stream_max_retries=0",
    ];
    const overrides = [
      `model_providers.svc={${provider.join(",")}}`,
      `model_provider="svc"`,
      `approval_policy="never"`,
      // no analytics, feedback uploads or update checks
      "analytics.enabled=false",
      "feedback.enabled=false",
      "check_for_update_on_startup=false",
      ...shellEnvironment(),
    ];
    if (access.mcpUrl) {
      overrides.push(
        `mcp_servers.svc.url=${toml(access.mcpUrl)}`,
        `mcp_servers.svc.bearer_token_env_var="SVC_MCP_TOKEN"`,
        `mcp_servers.svc.default_tools_approval_mode="approve"`,
        // the first model request waits for svc's tools; a server that does not come up ends the
        // attempt (and the run fails over) instead of running the agent without them
        "mcp_servers.svc.required=true",
      );
    }
    const argv = [target.bin ?? this.command, "exec", "--json", "--skip-git-repo-check", "--ephemeral"];
    argv.push("--ignore-rules", "--color", "never", "-m", target.model);
    const agentAccess = pipeline.agentAccess ?? "read";
    if (pipeline.sandbox) argv.push("--sandbox", SANDBOX[agentAccess]);
    else {
      const paths = {
        worktree: await realpath(context.cwd),
        configDir: await realpath(context.configDir),
        install: await codexInstall(argv[0]!, context.runEnv.PATH),
      };
      overrides.push(...codexPermissions(paths, agentAccess));
    }
    for (const override of overrides) argv.push("-c", override);
    argv.push("--output-last-message", lastMessage);
    if (pipeline.result) {
      const schemaFile = join(agentDir, "result-schema.json");
      writeFreshFile(schemaFile, JSON.stringify(standaloneSchema(pipeline.result.schema), null, 2), 0o644);
      argv.push("--output-schema", schemaFile);
    }
    argv.push("-");
    const env = { CODEX_HOME: codexHome, [KEY_VARIABLE]: context.key };
    return { argv, env, stdin: promptText(context.prompt) };
  },

  async report(stdout: string, context: CliContext): Promise<CliReport> {
    const events = jsonLines(stdout);
    const calls: string[] = [];
    const usage = { input: 0, cached: 0, output: 0 };
    let turns = 0;
    for (const event of events) {
      const item = event.item as
        | { type?: string; server?: string; tool?: string; status?: string }
        | undefined;
      if (event.type === "item.completed" && item?.type === "mcp_tool_call")
        calls.push(`${item.server}.${item.tool}${item.status === "failed" ? " (failed)" : ""}`);
      if (event.type === "item.completed" && item?.type === "command_execution") calls.push("shell");
      if (event.type === "turn.completed") {
        turns += 1;
        const used = (event.usage ?? {}) as {
          input_tokens?: number;
          cached_input_tokens?: number;
          output_tokens?: number;
        };
        usage.input += used.input_tokens ?? 0;
        usage.cached += used.cached_input_tokens ?? 0;
        usage.output += used.output_tokens ?? 0;
      }
    }
    const summary = [
      `# turns: ${turns}`,
      `# tool calls: ${countCalls(calls)}`,
      `# tokens: input ${usage.input} (cached ${usage.cached}), output ${usage.output}`,
    ];
    const used = turns > 0 ? { usage: { input_tokens: usage.input, output_tokens: usage.output } } : {};
    // a top-level `error` event ends the run only when no turn completed (Codex also reports
    // notices it recovered from that way)
    const failed =
      events.findLast((event) => event.type === "turn.failed") ??
      (turns === 0 ? events.findLast((event) => event.type === "error") : undefined);
    if (failed) {
      const message =
        (failed.error as { message?: string } | undefined)?.message ?? String(failed.message ?? "error");
      const status = /\bstatus:? (\d{3})\b/.exec(message)?.[1];
      return {
        ...(status ? { apiStatus: Number(status) } : {}),
        overloaded: /overloaded/i.test(message),
        error: message,
        ...used,
        summary,
      };
    }
    // only a regular file Codex wrote: absent, a link (to a host file) or a FIFO is no result,
    // which the caller reports
    const text = readRegularFile(lastMessageFile(context.agentDir));
    const result = text === undefined ? undefined : lastJsonObject(text);
    return {
      ...(result ? { result } : {}),
      ...(text !== undefined ? { finalText: text } : {}),
      ...used,
      summary,
    };
  },
};

/**
 * What the commands Codex runs (its shell tool, and the repository's scripts and Makefiles it
 * starts) inherit: Codex's own environment (the run's variables, PATH, the private HOME) without
 * the variables it needs for itself alone, the gateway token (`env_key`) and svc's run token and
 * MCP settings (`SVC_*`): what a command prints goes back to the model, which a prompt injection
 * steers. Codex's default excludes (`*KEY*`, `*SECRET*`, `*TOKEN*`) are off by default, and turning
 * them on would also take the pipeline's own `env` values of those names from its commands, so the
 * names are listed instead (glob patterns).
 */
function shellEnvironment(): string[] {
  return [
    `shell_environment_policy.inherit="all"`,
    "shell_environment_policy.ignore_default_excludes=true",
    `shell_environment_policy.exclude=["${KEY_VARIABLE}","SVC_*"]`,
  ];
}

/** In the agent's folder, made empty after the setup steps: no step could have written it first. */
function lastMessageFile(agentDir: string): string {
  return join(agentDir, "last-message.txt");
}
