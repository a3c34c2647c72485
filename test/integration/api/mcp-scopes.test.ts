import { existsSync } from "node:fs";
import { mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { issueRunToken } from "../../../db/api_tokens.ts";
import type { ConfigSnapshot } from "../../../shared/config/types.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { type ApiHarness, apiConfig, seedLineage, startApi, tokensBlock, VIA_PROXY } from "./support.ts";

/**
 * The tool protocol driven by the MCP SDK's own client over Streamable HTTP: what each kind of
 * caller sees in tools/list, which calls it may make, and that a refused or invalid call runs nothing.
 */
let db: TestDatabase;
let api: ApiHarness;
let dir: string;
let sandboxed: string;
let runToken: string;
/** a run token whose worktree has been removed (the run ended) */
let goneToken: string;
let invocation: string;

function withMarkTool(config: ConfigSnapshot): ConfigSnapshot {
  const plain = config.pipelines.plain!;
  return {
    ...config,
    // "plain" is orchestrated here, so an orchestrator's token has a pipeline to act for
    pipelines: {
      ...config.pipelines,
      plain: {
        ...plain,
        orchestrator: { strategy: { type: "auto" }, targets: [], maxTasks: 8, maxParallel: 2 },
      },
    },
    hostTools: {
      ...config.hostTools,
      mark: {
        name: "mark",
        description: "create the file named by path",
        input: { path: { type: "string", required: true }, count: { type: "integer", required: false } },
        exec: "/usr/bin/touch",
        args: ["$path"],
        env: {},
      },
      // what a tool sees: its working directory, what is in it, and its whole environment
      where: {
        name: "where",
        description: "print the working directory, its entries and the environment",
        input: {},
        exec: "/bin/sh",
        args: ["-c", "pwd; echo --; ls -A; echo --; env"],
        env: { TOOL_SETTING: "declared" },
      },
      show: {
        name: "show",
        description: "print one file of the worktree",
        input: { file: { type: "path", required: true } },
        exec: "/bin/cat",
        args: ["$file"],
        env: {},
      },
    },
  };
}

async function connect(url: string, token?: string, headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: "svc-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
    requestInit: { headers: { ...headers, ...(token ? { authorization: `Bearer ${token}` } : {}) } },
  });
  await client.connect(transport);
  return client;
}

async function toolNames(client: Client): Promise<string[]> {
  return (await client.listTools()).tools.map((tool) => tool.name).sort();
}

function text(result: Awaited<ReturnType<Client["callTool"]>>): string {
  return (result.content as { type: string; text: string }[]).map((part) => part.text).join("");
}

beforeAll(async () => {
  db = await createTestDatabase(inject("adminDatabaseUrl"));
  dir = await mkdtemp(join(tmpdir(), "svc-mcp-"));
  api = await startApi(
    db.url,
    withMarkTool(
      apiConfig({
        tokens: tokensBlock({
          reader: ["mcp:read"],
          writer: ["mcp:write"],
          marker: ["mcp:read", "host:execute:mark"],
          onlyexec: ["host:execute:mark"],
          star: ["*"],
        }),
      }),
    ),
  );
  const ids = await seedLineage(api.pool);
  invocation = ids.invocation;
  const scopes = ["mcp:read", "mcp:write", "host:execute:mark", "host:execute:where", "host:execute:show"];
  const binding = { pipeline: "plain", agent: "reviewer", repo: "acme/app", worktree: dir };
  const expiresAt = new Date(Date.now() + 600_000);
  sandboxed = (
    await issueRunToken(api.pool, {
      invocationId: invocation,
      scopes,
      sandboxed: true,
      expiresAt,
      run: binding,
    })
  ).token;
  runToken = (
    await issueRunToken(api.pool, {
      invocationId: invocation,
      scopes,
      sandboxed: false,
      expiresAt,
      run: binding,
    })
  ).token;
  goneToken = (
    await issueRunToken(api.pool, {
      invocationId: invocation,
      scopes,
      sandboxed: false,
      expiresAt,
      run: { ...binding, worktree: join(dir, "removed-checkout") },
    })
  ).token;
});

afterAll(async () => {
  await api?.close();
  await db?.drop();
  await rm(dir, { recursive: true, force: true });
});

describe("tools/list is filtered by scope", () => {
  it("initialize negotiates with the SDK and names the server", async () => {
    const client = await connect(api.url, "secret-reader");
    expect(client.getServerVersion()?.name).toBe("svc");
    expect(client.getServerCapabilities()?.tools).toBeDefined();
    await client.close();
  });

  it("mcp:read sees the read tools only, each marked readOnlyHint", async () => {
    const client = await connect(api.url, "secret-reader");
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual([
      "get_trace",
      "read_knowledge",
      "read_note",
      "search_knowledge",
      "search_notes",
    ]);
    for (const tool of tools) expect(tool.annotations?.readOnlyHint).toBe(true);
    await client.close();
  });

  it("mcp:write adds the write tools but no host tool", async () => {
    const client = await connect(api.url, "secret-writer");
    expect(await toolNames(client)).toEqual([
      "get_trace",
      "read_knowledge",
      "read_note",
      "search_knowledge",
      "search_notes",
      "submit_note",
    ]);
    const submit = (await client.listTools()).tools.find((tool) => tool.name === "submit_note");
    expect(submit?.annotations?.readOnlyHint).toBe(false);
    await client.close();
  });

  it("host:execute:mark adds host_mark, with its input as a strict JSON schema", async () => {
    const client = await connect(api.url, "secret-marker");
    expect(await toolNames(client)).toEqual([
      "get_trace",
      "host_mark",
      "read_knowledge",
      "read_note",
      "search_knowledge",
      "search_notes",
    ]);
    const mark = (await client.listTools()).tools.find((tool) => tool.name === "host_mark");
    expect(mark?.inputSchema).toMatchObject({
      type: "object",
      properties: { path: { type: "string" }, count: { type: "integer" } },
      required: ["path"],
      additionalProperties: false,
    });
    await client.close();
  });

  it("* sees every tool; a sandboxed run token never sees host tools", async () => {
    const star = await connect(api.url, "secret-star");
    expect(await toolNames(star)).toEqual([
      "get_trace",
      "host_lint",
      "host_mark",
      "host_show",
      "host_where",
      "read_knowledge",
      "read_note",
      "search_knowledge",
      "search_notes",
      "submit_note",
    ]);
    await star.close();
    const box = await connect(api.url, sandboxed);
    expect(await toolNames(box)).toEqual([
      "get_trace",
      "read_knowledge",
      "read_note",
      "search_knowledge",
      "search_notes",
      "submit_note",
    ]);
    await box.close();
  });

  it("a token without mcp:read cannot open the protocol (403 Forbidden)", async () => {
    await expect(connect(api.url, "secret-onlyexec")).rejects.toThrow(/Forbidden/);
    const response = await fetch(`${api.url}/mcp`, {
      method: "POST",
      headers: {
        authorization: "Bearer secret-onlyexec",
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(response.status).toBe(403);
    expect(((await response.json()) as { error: { message: string } }).error.message).toBe("Forbidden");
  });
});

describe("tools/call", () => {
  it("the task tools are an orchestrator's: * and a direct run's token get Forbidden, and no task is created", async () => {
    for (const token of ["secret-star", runToken]) {
      const client = await connect(api.url, token);
      for (const name of ["create_task", "list_tasks", "wait_tasks", "read_task_result", "cancel_task"]) {
        await expect(
          client.callTool({
            name,
            arguments: { instructions: "x", ids: ["tsk_x"], timeout_s: 0, id: "tsk_x" },
          }),
        ).rejects.toMatchObject({ code: -32001, message: "MCP error -32001: Forbidden" });
      }
      await client.close();
    }
    const { rows } = await api.pool.query("SELECT count(*)::int AS n FROM svc.tasks WHERE spec IS NOT NULL");
    expect(rows[0].n).toBe(0);
  });

  it("an orchestrator's token sees the task tools; a run that has ended creates no task", async () => {
    const orchestrator = (
      await issueRunToken(api.pool, {
        invocationId: invocation,
        scopes: ["mcp:read", "mcp:write"],
        sandboxed: false,
        expiresAt: new Date(Date.now() + 600_000),
        run: { pipeline: "plain", role: "orchestrator" },
      })
    ).token;
    const client = await connect(api.url, orchestrator);
    expect(await toolNames(client)).toEqual(
      expect.arrayContaining(["create_task", "wait_tasks", "cancel_task"]),
    );
    expect((await client.callTool({ name: "list_tasks", arguments: {} })).structuredContent).toEqual({
      tasks: [],
    });
    // the seeded invocation is completed: a call still in flight when a run ends leaves nothing behind
    const refused = await client.callTool({ name: "create_task", arguments: { instructions: "late" } });
    expect(refused.isError).toBe(true);
    expect(text(refused)).toBe("this run is completed: it creates no more tasks");
    await client.close();
    const { rows } = await api.pool.query("SELECT count(*)::int AS n FROM svc.tasks WHERE spec IS NOT NULL");
    expect(rows[0].n).toBe(0);
  });

  it("an outsider's orchestrator cannot lend a task a principal (issue 55, finding 6)", async () => {
    const orchestratorOf = async (outsider: boolean | undefined) =>
      (
        await issueRunToken(api.pool, {
          invocationId: invocation,
          scopes: ["mcp:read", "mcp:write"],
          sandboxed: false,
          expiresAt: new Date(Date.now() + 600_000),
          run: { pipeline: "plain", role: "orchestrator", ...(outsider === undefined ? {} : { outsider }) },
        })
      ).token;
    const ask = { instructions: "act as the reviewer", principal: "pull-request-reviewer" };
    // a stranger's pull request steers this orchestrator: the team's identity is not its to lend
    for (const outsider of [true, undefined]) {
      const client = await connect(api.url, await orchestratorOf(outsider));
      const refused = await client.callTool({ name: "create_task", arguments: ask });
      expect(refused.isError).toBe(true);
      expect(text(refused)).toBe(
        `principal "pull-request-reviewer" is refused: this run's event came from outside the repository's team, and an outsider's run cannot give a task a principal`,
      );
      await client.close();
    }
    // the team's own orchestrator is told what is wrong with the binding instead
    const team = await connect(api.url, await orchestratorOf(false));
    const answered = await team.callTool({ name: "create_task", arguments: ask });
    expect(text(answered)).toContain('principal "pull-request-reviewer" is not a binding of pipeline plain');
    await team.close();
    const { rows } = await api.pool.query("SELECT count(*)::int AS n FROM svc.tasks WHERE spec IS NOT NULL");
    expect(rows[0].n).toBe(0);
  });

  it("a read tool works with mcp:read", async () => {
    const client = await connect(api.url, "secret-reader");
    const result = await client.callTool({ name: "search_notes", arguments: {} });
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toEqual({ notes: [] });
    await client.close();
  });

  it("a write tool is refused for mcp:read with exactly Forbidden, and writes nothing", async () => {
    const client = await connect(api.url, "secret-reader");
    await expect(client.callTool({ name: "submit_note", arguments: { body: "x" } })).rejects.toMatchObject({
      code: -32001,
      message: "MCP error -32001: Forbidden",
    });
    await client.close();
    // the wire answer itself: the JSON-RPC error message is exactly `Forbidden`
    const raw = await fetch(`${api.url}/mcp`, {
      method: "POST",
      headers: {
        authorization: "Bearer secret-reader",
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": "2025-06-18",
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 7,
        method: "tools/call",
        params: { name: "submit_note", arguments: { body: "x" } },
      }),
    });
    expect(await raw.json()).toEqual({
      jsonrpc: "2.0",
      id: 7,
      error: { code: -32001, message: "Forbidden" },
    });
    const { rows } = await api.pool.query("SELECT count(*)::int AS n FROM svc.notes");
    expect(rows[0].n).toBe(0);
  });

  it("a write tool works with mcp:write", async () => {
    const client = await connect(api.url, "secret-writer");
    const result = await client.callTool({
      name: "submit_note",
      arguments: { title: "t", body: "written by a token", tags: ["a"] },
    });
    expect(result.isError).toBeFalsy();
    const id = (result.structuredContent as { id: string }).id;
    expect(id).toMatch(/^not_/);
    const read = await client.callTool({ name: "read_note", arguments: { id } });
    expect(read.structuredContent).toMatchObject({ id, title: "t", body: "written by a token", tags: ["a"] });
    await client.close();
  });

  it("a run token's note belongs to its run; get_trace shows its own lineage", async () => {
    const client = await connect(api.url, runToken);
    const result = await client.callTool({ name: "submit_note", arguments: { body: "from the run" } });
    expect(result.structuredContent).toMatchObject({
      pipeline: "plain",
      agent: "reviewer",
      repo: "acme/app",
    });
    const { rows } = await api.pool.query("SELECT invocation_id FROM svc.notes WHERE body = 'from the run'");
    expect(rows).toEqual([{ invocation_id: invocation }]);
    const trace = await client.callTool({ name: "get_trace", arguments: {} });
    expect(trace.structuredContent).toMatchObject({ invocation, invocations: [{ id: invocation }] });
    await client.close();
  });

  it("a host tool is refused for mcp:write and for a sandboxed run token; nothing runs", async () => {
    const marker = join(dir, "refused");
    for (const token of ["secret-writer", sandboxed]) {
      const client = await connect(api.url, token);
      await expect(client.callTool({ name: "host_mark", arguments: { path: marker } })).rejects.toMatchObject(
        { code: -32001, message: "MCP error -32001: Forbidden" },
      );
      // an unknown host tool is refused the same way: names cannot be probed
      await expect(client.callTool({ name: "host_nope", arguments: {} })).rejects.toMatchObject({
        code: -32001,
      });
      await client.close();
    }
    expect(existsSync(marker)).toBe(false);
  });

  it("a host tool runs for host:execute:mark and for *, and reports its exit code", async () => {
    for (const [token, name] of [
      ["secret-marker", "by-scope"],
      ["secret-star", "by-star"],
    ] as const) {
      const marker = join(dir, name);
      const client = await connect(api.url, token);
      const result = await client.callTool({ name: "host_mark", arguments: { path: marker } });
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toMatchObject({ tool: "mark", exitCode: 0, stdout: "", stderr: "" });
      expect(existsSync(marker)).toBe(true);
      await client.close();
    }
  });

  it("a host tool runs in an empty directory of its own, removed afterwards, with the run's worktree as WORKTREE", async () => {
    const client = await connect(api.url, runToken);
    const result = await client.callTool({ name: "host_mark", arguments: { path: "relative-marker" } });
    expect(result.isError).toBeFalsy();
    // a relative path is the tool's own directory, never the checkout
    expect(existsSync(join(dir, "relative-marker"))).toBe(false);
    const where = await client.callTool({ name: "host_where", arguments: {} });
    expect(where.isError).toBeFalsy();
    const [cwd, entries, env] = (where.structuredContent as { stdout: string }).stdout.split("--\n");
    const cwdPath = cwd!.trim();
    expect(cwdPath.startsWith(await realpath(tmpdir()))).toBe(true);
    expect(cwdPath.startsWith(await realpath(dir))).toBe(false);
    expect(entries).toBe("");
    expect(existsSync(cwdPath)).toBe(false);
    const vars = Object.fromEntries(
      env!
        .trim()
        .split("\n")
        .map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)]),
    );
    // the declared env, the ingress's PATH and WORKTREE; nothing else of the ingress (sh adds PWD)
    expect(vars).toEqual({
      TOOL_SETTING: "declared",
      PATH: process.env
        .PATH!.split(":")
        .filter((entry) => entry.startsWith("/"))
        .join(":"),
      WORKTREE: await realpath(dir),
      PWD: cwdPath,
    });
    await client.close();
  });

  it("a path input resolves inside the run's worktree; a caller without one, or whose worktree is gone, is refused", async () => {
    await writeFile(join(dir, "inside.txt"), "inside\n");
    const client = await connect(api.url, runToken);
    const shown = await client.callTool({ name: "host_show", arguments: { file: "inside.txt" } });
    expect(shown.structuredContent).toMatchObject({ exitCode: 0, stdout: "inside\n" });
    await client.close();
    for (const [token, why] of [
      [
        "secret-star",
        "is a path in the caller's run worktree, and this caller has none (only a run's token does)",
      ],
      [goneToken, "is a path in the run's worktree, and that worktree is gone (the run has ended)"],
    ] as const) {
      const caller = await connect(api.url, token);
      const refused = await caller.callTool({
        name: "host_show",
        arguments: { file: join(dir, "inside.txt") },
      });
      expect(refused.isError).toBe(true);
      expect(text(refused)).toBe(`host tool show: input file ${why}`);
      await caller.close();
    }
  });

  it("bad input is refused before anything runs", async () => {
    const client = await connect(api.url, "secret-star");
    const cases: Record<string, unknown>[] = [
      { path: join(dir, "bad-type"), count: "three" },
      { path: join(dir, "bad-extra"), extra: true },
      { count: 1 },
      { path: 42 },
    ];
    for (const args of cases) {
      const result = await client.callTool({ name: "host_mark", arguments: args });
      expect(result.isError).toBe(true);
      expect(text(result)).toContain("Input validation error");
    }
    expect(existsSync(join(dir, "bad-type"))).toBe(false);
    expect(existsSync(join(dir, "bad-extra"))).toBe(false);
    const note = await client.callTool({ name: "submit_note", arguments: { title: "no body" } });
    expect(note.isError).toBe(true);
    const { rows } = await api.pool.query("SELECT count(*)::int AS n FROM svc.notes WHERE title = 'no body'");
    expect(rows[0].n).toBe(0);
    await client.close();
  });
});

describe("transport and authentication", () => {
  it("GET and DELETE /mcp answer 405", async () => {
    for (const method of ["GET", "DELETE"]) {
      const response = await fetch(`${api.url}/mcp`, { method, headers: { accept: "text/event-stream" } });
      expect(response.status).toBe(405);
      expect(response.headers.get("allow")).toBe("POST");
    }
  });

  it("a token that matches nothing gets 401", async () => {
    await expect(connect(api.url, "secret-wrong")).rejects.toThrow();
    const response = await api.request("POST", "/mcp", {
      token: "secret-wrong",
      body: { jsonrpc: "2.0", id: 1, method: "tools/list" },
    });
    expect(response.status).toBe(401);
  });

  it("an anonymous loopback client of a local install has *", async () => {
    const local = await startApi(db.url, withMarkTool(apiConfig(null, "127.0.0.1")));
    try {
      const client = await connect(local.url);
      expect(await toolNames(client)).toContain("host_mark");
      await client.close();
    } finally {
      await local.close();
    }
  });

  it("an anonymous loopback client has * even with auth.tokens configured", async () => {
    const client = await connect(api.url);
    expect(await toolNames(client)).toContain("host_mark");
    await client.close();
  });

  it("without a token, a request forwarded by a proxy answers 401, tokens configured or not", async () => {
    const exposed = await startApi(db.url, withMarkTool(apiConfig(null, "0.0.0.0")));
    try {
      for (const url of [api.url, exposed.url]) {
        await expect(connect(url, undefined, VIA_PROXY)).rejects.toThrow();
        const response = await fetch(`${url}/mcp`, {
          method: "POST",
          headers: {
            ...VIA_PROXY,
            "content-type": "application/json",
            accept: "application/json, text/event-stream",
          },
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
        });
        expect(response.status, url).toBe(401);
      }
    } finally {
      await exposed.close();
    }
  });
});
