import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { issueRunToken } from "../../../db/api_tokens.ts";
import { newId } from "../../../shared/ids.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { type ApiHarness, apiConfig, seedLineage, startApi } from "./support.ts";

/**
 * `keep_result_so_far` over the tool protocol, driven by the MCP SDK's own client (issue 56, part
 * 2): only a run token the worker marked as keeping a result sees it; a result the pipeline's
 * result.schema refuses is a tool error naming where, and replaces nothing; a valid one replaces
 * the last on the token's agent task, while that task runs.
 */
const SCHEMA = {
  type: "object",
  properties: { review: { $ref: "svc://schemas/codehost/review/v1" } },
  required: ["review"],
};

let db: TestDatabase;
let api: ApiHarness;
let running: string;
let ended: string;
let shadowTask: string;
const tokens: Record<"keeper" | "plainRun" | "endedRun" | "shadow", string> = {
  keeper: "",
  plainRun: "",
  endedRun: "",
  shadow: "",
};
/** the shadow candidate's result: another shape than the live version's */
const CANDIDATE_SCHEMA = {
  type: "object",
  properties: { summary: { type: "string" } },
  required: ["summary"],
  additionalProperties: false,
};

async function connect(token: string): Promise<Client> {
  const client = new Client({ name: "svc-test", version: "1.0.0" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${api.url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  );
  return client;
}

async function keep(token: string, result: unknown): Promise<{ text: string; isError: boolean }> {
  const client = await connect(token);
  try {
    const answer = await client.callTool({ name: "keep_result_so_far", arguments: { result } });
    const text = (answer.content as { text: string }[]).map((part) => part.text).join("");
    return { text, isError: answer.isError === true };
  } finally {
    await client.close();
  }
}

async function kept(task: string): Promise<unknown> {
  const { rows } = await api.pool.query("SELECT kept_result FROM svc.tasks WHERE id = $1", [task]);
  return rows[0]?.kept_result;
}

const review = (body: string) => ({ review: { event: "COMMENT", body } });

beforeAll(async () => {
  db = await createTestDatabase(inject("adminDatabaseUrl"));
  const config = apiConfig({ tokens: {} });
  const plain = config.pipelines.plain!;
  api = await startApi(db.url, {
    ...config,
    pipelines: {
      ...config.pipelines,
      plain: {
        ...plain,
        result: { schema: SCHEMA },
        shadow: {
          versionFile: "pipelines/plain.next.yaml",
          share: 1,
          candidate: { ...plain, version: "2.0.0-next.1", result: { schema: CANDIDATE_SCHEMA } },
        },
      },
    },
  });
  const ids = await seedLineage(api.pool);
  ended = ids.task;
  running = newId("task");
  await api.pool.query(
    `INSERT INTO svc.tasks (id, invocation_id, kind, name, seq, status) VALUES ($1, $2, 'agent', 'agent', 2, 'running')`,
    [running, ids.invocation],
  );
  const issue = async (run: Record<string, unknown>) =>
    (
      await issueRunToken(api.pool, {
        invocationId: ids.invocation,
        scopes: ["mcp:read", "mcp:write"],
        sandboxed: false,
        expiresAt: new Date(Date.now() + 600_000),
        run: { pipeline: "plain", outsider: false, ...run },
      })
    ).token;
  tokens.keeper = await issue({ task: running, keepsResult: true });
  tokens.plainRun = await issue({ task: running });
  tokens.endedRun = await issue({ task: ended, keepsResult: true });
  // a shadow run of the same pipeline: its own invocation, running the candidate
  const shadowInvocation = newId("invocation");
  await api.pool.query(
    `INSERT INTO svc.invocations (id, workload_id, status, target, shadow, outputs_held)
     SELECT $1, workload_id, 'running', target, true, true FROM svc.invocations WHERE id = $2`,
    [shadowInvocation, ids.invocation],
  );
  shadowTask = newId("task");
  await api.pool.query(
    `INSERT INTO svc.tasks (id, invocation_id, kind, name, seq, status) VALUES ($1, $2, 'agent', 'agent', 1, 'running')`,
    [shadowTask, shadowInvocation],
  );
  tokens.shadow = (
    await issueRunToken(api.pool, {
      invocationId: shadowInvocation,
      scopes: ["mcp:read", "mcp:write"],
      sandboxed: false,
      expiresAt: new Date(Date.now() + 600_000),
      run: { pipeline: "plain", outsider: false, task: shadowTask, keepsResult: true },
    })
  ).token;
});

afterAll(async () => {
  await api?.close();
  await db?.drop();
});

describe("keep_result_so_far", () => {
  it("is offered only to a run token marked as keeping a result: another run's token gets Forbidden", async () => {
    const keeper = await connect(tokens.keeper);
    expect((await keeper.listTools()).tools.map((tool) => tool.name)).toContain("keep_result_so_far");
    await keeper.close();
    const other = await connect(tokens.plainRun);
    expect((await other.listTools()).tools.map((tool) => tool.name)).not.toContain("keep_result_so_far");
    await expect(
      other.callTool({ name: "keep_result_so_far", arguments: { result: review("FORBIDDEN") } }),
    ).rejects.toMatchObject({ code: -32001 });
    await other.close();
    expect(await kept(running)).toBeNull();
  });

  it("a result result.schema refuses is a tool error naming where, and keeps nothing; a valid one replaces the last", async () => {
    const refused = await keep(tokens.keeper, { review: { event: "LGTM", body: "x" } });
    expect(refused).toEqual({
      isError: true,
      text: expect.stringContaining(
        "not kept: the result does not match result.schema at /review/event: must be equal to one of the allowed values",
      ),
    });
    expect(await kept(running)).toBeNull();

    expect(await keep(tokens.keeper, review("FIRST"))).toMatchObject({ isError: false });
    expect(await kept(running)).toEqual(review("FIRST"));
    expect(await keep(tokens.keeper, review("SECOND"))).toMatchObject({ isError: false });
    expect(await kept(running)).toEqual(review("SECOND"));
    // a refused one later leaves the last valid one kept
    expect(await keep(tokens.keeper, { verdict: "none" })).toMatchObject({
      isError: true,
      text: expect.stringContaining("at /review: must have required property 'review'"),
    });
    expect(await kept(running)).toEqual(review("SECOND"));
  });

  it("a shadow run's result is checked against its candidate's result.schema, not the live one's", async () => {
    const live = await keep(tokens.shadow, review("LIVE SHAPE"));
    expect(live).toEqual({
      isError: true,
      text: expect.stringContaining("not kept: the result does not match result.schema"),
    });
    expect(await kept(shadowTask)).toBeNull();
    expect(await keep(tokens.shadow, { summary: "the candidate's shape" })).toMatchObject({ isError: false });
    expect(await kept(shadowTask)).toEqual({ summary: "the candidate's shape" });
  });

  it("an agent attempt that has ended keeps nothing", async () => {
    expect(await keep(tokens.endedRun, review("LATE"))).toEqual({
      isError: true,
      text: "not kept: this agent attempt has ended",
    });
    expect(await kept(ended)).toBeNull();
  });
});
