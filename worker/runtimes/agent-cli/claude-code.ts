import { realpath } from "node:fs/promises";
import { join } from "node:path";
import { writeFreshFile } from "../../../shared/no-follow.ts";
import { CONTAINER_PATHS } from "../../exec/sandbox/paths.ts";
import { PARTIAL_FILE, takesPartial } from "../../run/partial.ts";
import { lastJsonObject } from "../../run/result-check.ts";
import { type AgentCli, type CliContext, type CliReport, countCalls, jsonLines } from "./cli.ts";
import { claudeCodeSettings } from "./confinement.ts";
import { standaloneSchema } from "./result-schema.ts";

/** Claude Code's built-in tools per `agent_access`: reading and searching, and file edits. */
const BUILT_IN = { read: ["Read", "Grep", "Glob"], edit: ["Read", "Grep", "Glob", "Edit", "Write"] };

/**
 * Claude Code headless (`claude -p`): the user prompt on stdin, svc's system prompt appended to
 * Claude Code's own, the event stream on stdout (`stream-json`), the result through its
 * structured-output mode (`--json-schema`). Only svc's MCP server (`--mcp-config` with the run
 * token, `--strict-mcp-config`) and the built-in tools of the pipeline's `agent_access` are
 * available, all pre-approved; anything else is refused without a prompt (`dontAsk`). No settings
 * file is read (`--setting-sources ""`): a repository's `.claude/settings.json` cannot add hooks or
 * widen permissions. On the host, svc's own settings (`--settings RUN_DIR/claude-settings.json`,
 * confinement.ts) keep the file tools inside the worktree and turn hooks off. A review that keeps
 * its result so far (worker/run/partial.ts) may also Write that one file in RUN_DIR, whose path the
 * model is told: Claude Code has no shell to expand `$RUN_DIR`.
 */
export const claudeCode: AgentCli = {
  command: "claude",

  async launch(context: CliContext) {
    const { target, pipeline, prompt, access } = context;
    const builtIn = BUILT_IN[pipeline.agentAccess ?? "read"];
    const svcTools = access.env.SVC_MCP_CONFIG ? ["mcp__svc"] : [];
    const runDir = await partialRunDir(context);
    // the one file a read-only agent may write: an Edit rule covers every file-editing tool, Write
    // included (a Write rule matches nothing); `//` starts an absolute path
    const partial = runDir && !builtIn.includes("Write") ? [`Edit(/${join(runDir, PARTIAL_FILE)})`] : [];
    const tools = [...builtIn, ...(partial.length > 0 ? ["Write"] : [])];
    const argv = [target.bin ?? this.command, "-p", "--output-format", "stream-json", "--verbose"];
    argv.push("--model", target.model, "--no-session-persistence", "--setting-sources", "");
    argv.push("--tools", tools.join(","), "--allowedTools", [...svcTools, ...builtIn, ...partial].join(","));
    argv.push("--permission-mode", "dontAsk", "--strict-mcp-config");
    if (access.env.SVC_MCP_CONFIG) argv.push("--mcp-config", access.env.SVC_MCP_CONFIG);
    if (!pipeline.sandbox) {
      const file = join(context.agentDir, "claude-settings.json");
      const settings = await claudeCodeSettings(context.cwd, pipeline.agentAccess ?? "read", runDir);
      // a file, not an argument: the deny rules name every path beside the worktree's parents,
      // which on a busy host can pass the kernel's limit for one argument
      writeFreshFile(file, JSON.stringify(settings, null, 2), 0o600);
      argv.push("--settings", file);
    }
    const system = [
      prompt.system,
      runDir
        ? `\`$RUN_DIR\` in this run is \`${runDir}\`: your result so far goes to \`${join(runDir, PARTIAL_FILE)}\`.`
        : "",
    ]
      .filter(Boolean)
      .join("\n\n");
    if (system) {
      const file = join(context.agentDir, "system-prompt.md");
      writeFreshFile(file, system, 0o644);
      argv.push("--append-system-prompt-file", file);
    }
    if (pipeline.result) argv.push("--json-schema", JSON.stringify(standaloneSchema(pipeline.result.schema)));
    if (target.maxTurns) argv.push("--max-turns", String(target.maxTurns));
    const env: Record<string, string> = {
      // the worker's gateway and the attempt's token of it: the credential never reaches the CLI
      ANTHROPIC_API_KEY: context.key,
      ANTHROPIC_BASE_URL: context.baseUrl,
      // no telemetry, error reports, update checks or other traffic besides the model API
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      DISABLE_TELEMETRY: "1",
      DISABLE_ERROR_REPORTING: "1",
      DISABLE_AUTOUPDATER: "1",
      // a refused or throttled request ends the run at once: the gateway parks the credential and svc fails over
      CLAUDE_CODE_MAX_RETRIES: "0",
    };
    return { argv, env, stdin: prompt.user };
  },

  async report(stdout: string): Promise<CliReport> {
    const events = jsonLines(stdout);
    const init = events.find((event) => event.type === "system" && event.subtype === "init");
    const servers = (init?.mcp_servers ?? []) as { name: string; status: string }[];
    const calls: string[] = [];
    for (const event of events) {
      if (event.type !== "assistant") continue;
      const content = ((event.message as { content?: unknown })?.content ?? []) as {
        type: string;
        name?: string;
      }[];
      for (const block of content) if (block.type === "tool_use" && block.name) calls.push(block.name);
    }
    const done = events.findLast((event) => event.type === "result") as ClaudeResult | undefined;
    const usage = done?.usage ?? {};
    const summary = [
      `# mcp servers: ${servers.map((server) => `${server.name} ${server.status}`).join(", ") || "none"}`,
      `# turns: ${done?.num_turns ?? "unknown"}`,
      `# tool calls: ${countCalls(calls)}`,
      `# tokens: input ${usage.input_tokens ?? 0} (cache read ${usage.cache_read_input_tokens ?? 0}), output ${usage.output_tokens ?? 0}`,
    ];
    if (!done) return { error: "it printed no result event", summary };
    // Anthropic counts cached prompt tokens apart; svc's input is the whole prompt, as OpenAI's is
    const input =
      (usage.input_tokens ?? 0) +
      (usage.cache_creation_input_tokens ?? 0) +
      (usage.cache_read_input_tokens ?? 0);
    const used = done.usage
      ? { usage: { input_tokens: input, output_tokens: usage.output_tokens ?? 0 } }
      : {};
    const text = typeof done.result === "string" ? done.result : undefined;
    if (done.subtype === "error_max_turns") return { turnLimit: true, ...used, summary };
    if (done.is_error) {
      return {
        ...used,
        ...(typeof done.api_error_status === "number" ? { apiStatus: done.api_error_status } : {}),
        overloaded: done.api_error_type === "overloaded_error",
        error: text ?? done.subtype ?? "error",
        summary,
      };
    }
    const structured = done.structured_output;
    const result =
      structured && typeof structured === "object" && !Array.isArray(structured)
        ? (structured as Record<string, unknown>)
        : text !== undefined
          ? lastJsonObject(text)
          : undefined;
    return {
      ...(result ? { result } : {}),
      ...(text !== undefined ? { finalText: text } : {}),
      ...used,
      summary,
    };
  },
};

/**
 * RUN_DIR as the CLI sees it, when the pipeline keeps a result so far there: its real path on the
 * host (the permission rules compare real paths), its mount point in a sandbox.
 */
async function partialRunDir(context: CliContext): Promise<string | undefined> {
  const runDir = context.runEnv.RUN_DIR;
  const { pipeline } = context;
  if (!runDir || !takesPartial({ ...pipeline, outputs: pipeline.outputs ?? {} })) return undefined;
  return pipeline.sandbox ? CONTAINER_PATHS.runDir : await realpath(runDir);
}

/** The fields of Claude Code's final `result` event that svc reads. */
interface ClaudeResult {
  subtype?: string;
  is_error?: boolean;
  num_turns?: number;
  result?: unknown;
  structured_output?: unknown;
  api_error_status?: number | null;
  api_error_type?: string;
  usage?: {
    input_tokens?: number;
    output_tokens?: number;
    cache_read_input_tokens?: number;
    cache_creation_input_tokens?: number;
  };
}
