import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { AgentCliTarget } from "../../../shared/config/types.ts";
import { claudeCode } from "../../../worker/runtimes/agent-cli/claude-code.ts";
import type { CliContext } from "../../../worker/runtimes/agent-cli/cli.ts";
import { codex } from "../../../worker/runtimes/agent-cli/codex.ts";
import { codexPermissions } from "../../../worker/runtimes/agent-cli/confinement.ts";
import { standaloneSchema } from "../../../worker/runtimes/agent-cli/result-schema.ts";

const lines = (...events: unknown[]) => events.map((event) => JSON.stringify(event)).join("\n");
const context = { agentDir: "/nonexistent/agent" } as CliContext;

describe("agent CLI runtimes: reading what the CLI said", () => {
  it("inlines handler schema ids so the CLI's structured-output mode gets one self-contained schema", () => {
    const schema = standaloneSchema({
      type: "object",
      properties: { review: { $ref: "svc://schemas/codehost/review/v1" }, other: { $ref: "#/x" } },
    });
    const review = (schema.properties as Record<string, Record<string, unknown>>).review!;
    expect(review).toMatchObject({ type: "object", required: ["event", "body"] });
    expect(review.$id).toBeUndefined();
    expect(JSON.stringify(schema)).not.toContain("svc://");
    expect((schema.properties as Record<string, unknown>).other).toEqual({ $ref: "#/x" });
  });

  it("claude-code: the structured output is the result; the summary counts turns, tool calls and tokens", async () => {
    const stdout = lines(
      { type: "system", subtype: "init", mcp_servers: [{ name: "svc", status: "connected" }] },
      { type: "assistant", message: { content: [{ type: "tool_use", name: "mcp__svc__submit_note" }] } },
      { type: "assistant", message: { content: [{ type: "tool_use", name: "mcp__svc__submit_note" }] } },
      {
        type: "result",
        subtype: "success",
        is_error: false,
        num_turns: 3,
        result: "done",
        structured_output: { summary: "ok" },
        usage: { input_tokens: 120, output_tokens: 7, cache_read_input_tokens: 100 },
      },
    );
    expect(await claudeCode.report(`warning: not JSON\n${stdout}`, context)).toEqual({
      result: { summary: "ok" },
      finalText: "done",
      // the cached prompt tokens are part of the input, as in OpenAI's usage
      usage: { input_tokens: 220, output_tokens: 7 },
      summary: [
        "# mcp servers: svc connected",
        "# turns: 3",
        "# tool calls: mcp__svc__submit_note ×2",
        "# tokens: input 120 (cache read 100), output 7",
      ],
    });
  });

  it("claude-code: api_error_status and overloaded_error, the turn limit, and no result event", async () => {
    const refused = await claudeCode.report(
      lines({ type: "result", is_error: true, api_error_status: 403, result: "forbidden" }),
      context,
    );
    expect(refused).toMatchObject({ apiStatus: 403, overloaded: false, error: "forbidden" });
    expect(refused.usage).toBeUndefined();
    const busy = await claudeCode.report(
      lines({ type: "result", is_error: true, api_error_status: 529, api_error_type: "overloaded_error" }),
      context,
    );
    expect(busy).toMatchObject({ apiStatus: 529, overloaded: true });
    const capped = await claudeCode.report(
      lines({ type: "result", subtype: "error_max_turns", is_error: true }),
      context,
    );
    expect(capped.turnLimit).toBe(true);
    expect((await claudeCode.report("Segmentation fault\n", context)).error).toBe(
      "it printed no result event",
    );
  });

  it("codex: the HTTP status of turn.failed, tool calls and usage of the turn", async () => {
    const failed = await codex.report(
      lines(
        { type: "turn.started" },
        { type: "error", message: "exceeded retry limit, last status: 429 Too Many Requests, request id: r" },
        {
          type: "turn.failed",
          error: { message: "exceeded retry limit, last status: 429 Too Many Requests" },
        },
      ),
      context,
    );
    expect(failed).toMatchObject({ apiStatus: 429, overloaded: false });
    const refused = await codex.report(
      lines({
        type: "turn.failed",
        error: { message: "unexpected status 401 Unauthorized: Incorrect API key" },
      }),
      context,
    );
    expect(refused.apiStatus).toBe(401);
    expect(refused.usage).toBeUndefined();
    const done = await codex.report(
      lines(
        {
          type: "item.completed",
          item: { type: "mcp_tool_call", server: "svc", tool: "submit_note", status: "completed" },
        },
        {
          type: "item.completed",
          item: { type: "mcp_tool_call", server: "svc", tool: "read_note", status: "failed" },
        },
        { type: "turn.completed", usage: { input_tokens: 50, cached_input_tokens: 10, output_tokens: 5 } },
        { type: "turn.completed", usage: { input_tokens: 30, output_tokens: 2 } },
      ),
      context,
    );
    expect(done).toEqual({
      usage: { input_tokens: 80, output_tokens: 7 },
      summary: [
        "# turns: 2",
        "# tool calls: svc.submit_note, svc.read_note (failed)",
        "# tokens: input 80 (cached 10), output 7",
      ],
    });
  });
});

describe("agent CLI runtimes: how the CLI is started", () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  const launchContext = async (
    runtime: AgentCliTarget["runtime"],
    agentAccess?: "read" | "edit",
    sandboxed = false,
  ) => {
    const root = await mkdtemp(join(tmpdir(), "svc-agent-cli-launch-"));
    dirs.push(root);
    const runDir = join(root, "run");
    const cwd = join(root, "checkout");
    await mkdir(runDir);
    await mkdir(cwd);
    await writeFile(join(root, "instance.key"), "beside the worktree\n");
    const target: AgentCliTarget = {
      ...{ name: "t", runtime, model: "m", timeoutMs: 1_000, maxTurns: 7 },
      credentials: [{ name: "k", secret: { kind: "inline", value: "sk-secret-key" } }],
    };
    const access = {
      token: "svct_run_token",
      mcpUrl: "http://127.0.0.1:7420/mcp",
      env: { SVC_MCP_CONFIG: join(runDir, "mcp.json"), SVC_MCP_TOKEN: "svct_run_token" },
    };
    const context: CliContext = {
      ...{ target, cwd, configDir: root, agentDir: runDir, home: join(runDir, "home"), access, runEnv: {} },
      key: "sk-secret-key",
      baseUrl: "http://127.0.0.1:7499",
      pipeline: {
        result: { schema: { type: "object" } },
        ...(agentAccess ? { agentAccess } : {}),
        ...(sandboxed ? { sandbox: { image: "agent:default", mounts: [] } } : {}),
      },
      prompt: { system: "persona", user: "do it" },
    };
    return context;
  };

  it("claude-code: svc's MCP server and the access level's built-in tools, pre-approved; the key only in the environment", async () => {
    const read = await claudeCode.launch(await launchContext("claude-code"));
    expect(read.argv.join(" ")).toContain("--tools Read,Grep,Glob --allowedTools mcp__svc,Read,Grep,Glob");
    expect(read.argv).toEqual(
      expect.arrayContaining(["--strict-mcp-config", "--permission-mode", "dontAsk"]),
    );
    expect(read.argv.join(" ")).toContain("--max-turns 7");
    const edit = await claudeCode.launch(await launchContext("claude-code", "edit"));
    expect(edit.argv.join(" ")).toContain("--tools Read,Grep,Glob,Edit,Write");
    expect(edit.env.ANTHROPIC_API_KEY).toBe("sk-secret-key");
    for (const launch of [read, edit]) {
      expect(launch.argv.join(" ")).not.toContain("sk-secret-key");
      expect(launch.argv.join(" ")).not.toContain("svct_run_token");
    }
  });

  it("claude-code on the host: settings that block reads and writes outside the worktree, deny what is beside it, and turn hooks off", async () => {
    const context = await launchContext("claude-code", "edit");
    const launch = await claudeCode.launch(context);
    const file = join(context.agentDir, "claude-settings.json");
    expect(launch.argv.join(" ")).toContain(`--settings ${file}`);
    expect(launch.argv[launch.argv.indexOf("--setting-sources") + 1]).toBe("");
    const settings = JSON.parse(await readFile(file, "utf8"));
    const root = join(context.cwd, "..");
    expect(settings).toMatchObject({
      disableAllHooks: true,
      permissions: {
        blockReadsOutsideWorkingDirectories: true,
        blockWritesOutsideWorkingDirectories: true,
        additionalDirectories: [],
        allow: [`Read(/${context.cwd}/**)`, `Edit(/${context.cwd}/**)`],
      },
    });
    const deny: string[] = settings.permissions.deny;
    for (const beside of [join(root, "instance.key"), context.agentDir, "/etc"])
      expect(deny).toEqual(
        expect.arrayContaining([`Read(/${beside})`, `Read(/${beside}/**)`, `Edit(/${beside}/**)`]),
      );
    // the worktree and the directories above it are never denied: that would refuse the worktree itself
    for (const rule of deny) {
      const path = rule.replace(/^\w+\(\/|(\/\*\*)?\)$/g, "");
      expect(context.cwd === path || context.cwd.startsWith(`${path}/`), rule).toBe(false);
    }
    const sandboxed = await claudeCode.launch(await launchContext("claude-code", "read", true));
    expect(sandboxed.argv).not.toContain("--settings");
  });

  it("codex on the host: svc's permission profile shows it the worktree only; in svc's container, --sandbox", async () => {
    const read = await codex.launch(await launchContext("codex"));
    expect(read.argv).not.toContain("--sandbox");
    expect(read.argv).toEqual(
      expect.arrayContaining([
        'default_permissions="svc"',
        'permissions.svc.filesystem={":minimal"="read",":workspace_roots"={"."="read"}}',
        "permissions.svc.network={enabled=false}",
      ]),
    );
    const edit = await codex.launch(await launchContext("codex", "edit"));
    expect(edit.argv.join(" ")).toContain(
      `":workspace_roots"={"."="write",".git"="read",".codex"="read",".agents"="read"}`,
    );
    const boxed = await codex.launch(await launchContext("codex", "read", true));
    expect(boxed.argv.join(" ")).toContain("--sandbox read-only");
    expect(boxed.argv.join(" ")).not.toContain("default_permissions");
  });

  it("codex on the host, its configuration directory under /etc (which :minimal shows): all of it hidden, the worktree opened again", () => {
    const paths = {
      worktree: "/etc/svc/config/workspaces/run_1/checkout",
      configDir: "/etc/svc/config",
      install: "/usr/lib/node_modules",
    };
    const filesystem = (access: "read" | "edit") =>
      codexPermissions(paths, access).find((override) => override.includes(".filesystem="));
    expect(filesystem("read")).toBe(
      'permissions.svc.filesystem={":minimal"="read","/etc/svc/config"="none","/etc/svc/config/workspaces/run_1/checkout"="write","/usr/lib/node_modules"="read"}',
    );
    expect(filesystem("edit")).toContain(
      '"/etc/svc/config/workspaces/run_1/checkout"="write","/etc/svc/config/workspaces/run_1/checkout/.git"="read"',
    );
    // elsewhere the worktree is Codex's workspace root, read-only for `read`
    const elsewhere = { ...paths, worktree: "/srv/svc/workspaces/run_1/checkout", configDir: "/srv/svc" };
    expect(codexPermissions(elsewhere, "read").join(" ")).toContain('":workspace_roots"={"."="read"}');
    expect(codexPermissions(elsewhere, "read").join(" ")).not.toContain("none");
  });

  it("codex: the sandbox of the access level, svc's server pre-approved, key and token only in the environment", async () => {
    const read = await codex.launch(await launchContext("codex", "read", true));
    expect(read.argv.join(" ")).toContain("--sandbox read-only");
    expect(read.argv).toEqual(
      expect.arrayContaining([
        'mcp_servers.svc.bearer_token_env_var="SVC_MCP_TOKEN"',
        'mcp_servers.svc.default_tools_approval_mode="approve"',
      ]),
    );
    const edit = await codex.launch(await launchContext("codex", "edit", true));
    expect(edit.argv.join(" ")).toContain("--sandbox workspace-write");
    expect(edit.env.OPENAI_API_KEY).toBe("sk-secret-key");
    for (const launch of [read, edit]) {
      expect(launch.argv.join(" ")).not.toContain("sk-secret-key");
      expect(launch.argv.join(" ")).not.toContain("svct_run_token");
    }
  });
});
