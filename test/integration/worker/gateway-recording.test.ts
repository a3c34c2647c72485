import { createHash } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { migrate } from "../../../db/migrate.ts";
import { newId } from "../../../shared/ids.ts";
import { CredentialCooldowns } from "../../../worker/credentials/cooldowns.ts";
import { ModelGateway } from "../../../worker/gateway/gateway.ts";
import { sweepWorkspaces } from "../../../worker/queue/retention.ts";
import { agentCall, ScriptedModelApi, sse, targetOn } from "../../e2e/hostile/gateway-rig.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { captureLogger } from "./helpers.ts";

const KEY = "sk-ant-recording-0001";
const MESSAGES = "/v1/messages";
/** an Anthropic stream, written in three pieces */
const STREAM = [
  sse([
    {
      type: "message_start",
      message: { id: "msg_1", role: "assistant", usage: { input_tokens: 9, output_tokens: 1 } },
    },
  ]),
  sse([{ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "line 25 is wrong" } }]),
  sse([{ type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 7 } }]),
];
/** a JSON answer that carries a credential-shaped text: recorded redacted */
const LEAKY = {
  id: "msg_2",
  type: "message",
  role: "assistant",
  content: [{ type: "text", text: "run it with Authorization: Bearer abcdefghijklmnopqrstuvwxyz" }],
  usage: { input_tokens: 5, output_tokens: 5 },
};

/**
 * The worker's real gateway, on loopback, before a loopback Anthropic API: a live run that records
 * (its pipeline's record_answers) keeps each answer, a stream byte for byte, the credential never;
 * a backtest's candidate run with replay_answers is answered from that recording, in call order,
 * without the API hearing of it: the same request `replayed`, another `diverged`, one past the end
 * `missing` and refused as the model's failure.
 */
describe("the gateway records a live run's model answers and replays them to a backtest's candidate", () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  let gateway: ModelGateway;
  const api = new ScriptedModelApi();
  // the API's address is known once it listens
  const target = () => targetOn("claude-code", api, "claude");
  const ids = {
    live: {
      trigger: newId("trigger"),
      workload: newId("workload"),
      invocation: newId("invocation"),
      task: newId("task"),
    },
    candidate: {
      trigger: newId("trigger"),
      workload: newId("workload"),
      invocation: newId("invocation"),
      task: newId("task"),
    },
    backtest: newId("backtest"),
  };

  const seed = async (run: typeof ids.live, shadow: boolean, backtest: string | null) => {
    await pool.query(
      `INSERT INTO svc.triggers (id, kind, source, event_name, status, payload, hold_outputs, backtest_id)
       VALUES ($1, $2, 'review', 'pull_request.opened', 'running', '{}', $3, $4)`,
      [run.trigger, backtest ? "replay" : "codehost", backtest !== null, backtest],
    );
    await pool.query(
      "INSERT INTO svc.workloads (id, trigger_id, pipeline, status, workspace) VALUES ($1, $2, 'review', 'running', '/tmp/ws')",
      [run.workload, run.trigger],
    );
    await pool.query(
      "INSERT INTO svc.invocations (id, workload_id, status, target, attempts, shadow) VALUES ($1, $2, 'running', 'claude', 1, $3)",
      [run.invocation, run.workload, shadow],
    );
    await pool.query(
      "INSERT INTO svc.tasks (id, invocation_id, kind, name, seq) VALUES ($1, $2, 'agent', 'agent on claude', 1)",
      [run.task, run.invocation],
    );
  };

  const attempt = async (run: typeof ids.live, record: boolean) => {
    const account = await gateway.account({
      invocationId: run.invocation,
      taskId: run.task,
      budget: undefined,
      onToken: () => {},
      answers: { record },
    });
    return { account, lease: account.lease(target(), "c0", KEY) };
  };

  const ask = (token: string, content: string, stream = true) =>
    agentCall(gateway.url, token, {
      path: MESSAGES,
      body: { model: "m", max_tokens: 100, stream, messages: [{ role: "user", content }] },
    });

  beforeAll(async () => {
    await api.start();
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    pool = new pg.Pool({ connectionString: database.url, max: 3 });
    await migrate(pool);
    const { logger } = captureLogger();
    gateway = new ModelGateway({
      db: pool,
      credentials: await CredentialCooldowns.load(pool, logger),
      logger,
    });
    await gateway.start();
    await seed(ids.live, false, null);
    await pool.query(
      `INSERT INTO svc.backtests (id, pipeline, version_file, candidate_version, live_version, selection, replay_answers)
       VALUES ($1, 'review', 'pipelines/review.next.yaml', '1.1.0', '1.0.0', '{}', true)`,
      [ids.backtest],
    );
    await seed(ids.candidate, true, ids.backtest);
    await pool.query(
      `INSERT INTO svc.backtest_items (backtest_id, repo, pull_number, replayed_trigger_id, trigger_id, head_sha, final_head_sha, merged_at)
       VALUES ($1, 'acme/widgets', 1, $2, $3, 'a', 'b', now())`,
      [ids.backtest, ids.live.trigger, ids.candidate.trigger],
    );
  });

  afterAll(async () => {
    await gateway?.close();
    await pool?.end();
    await database?.drop();
    await api.stop();
  });

  it("records each answer of a live run in call order: a stream whole, as received; a credential-shaped text redacted", async () => {
    api.answerWith = (request, response) => {
      if (request.body?.stream) {
        response.writeHead(200, { "content-type": "text/event-stream", "request-id": "req_1" });
        // three writes: the stream is kept as the agent got it, however it was cut in pieces
        for (const piece of STREAM) response.write(piece);
        response.end();
      } else {
        response.writeHead(200, { "content-type": "application/json" });
        response.end(JSON.stringify(LEAKY));
      }
    };
    const { account, lease } = await attempt(ids.live, true);
    const first = await ask(lease.token, "review with line 25 in mind");
    expect(first.text).toBe(STREAM.join(""));
    const second = await ask(lease.token, "and once more", false);
    expect(second.text).toContain("Bearer abcdefghijklmnopqrstuvwxyz");
    await account.close();

    const { rows } = await pool.query(
      `SELECT call, api, path, target, request_sha256, status, headers, body, complete
         FROM svc.recorded_answers WHERE invocation_id = $1 ORDER BY call`,
      [ids.live.invocation],
    );
    expect(rows.map((row) => [row.call, row.api, row.path, row.target, row.status, row.complete])).toEqual([
      [1, "anthropic", MESSAGES, "claude", 200, true],
      [2, "anthropic", MESSAGES, "claude", 200, true],
    ]);
    expect(rows[0].body.toString("utf8")).toBe(STREAM.join(""));
    expect(rows[0].headers).toMatchObject({ "content-type": "text/event-stream", "request-id": "req_1" });
    // the hash of the body as the API got it
    const sent = api.seen(KEY)[0]!.text;
    expect(rows[0].request_sha256).toBe(createHash("sha256").update(sent).digest("hex"));
    expect(rows[1].body.toString("utf8")).toContain("Bearer [redacted]");
    expect(rows[1].body.toString("utf8")).not.toContain("abcdefghijklmnopqrstuvwxyz");
    // the credential is not in the recording
    expect(JSON.stringify(rows)).not.toContain(KEY);
  });

  it("a live run whose pipeline does not record keeps nothing", async () => {
    const run = {
      trigger: newId("trigger"),
      workload: newId("workload"),
      invocation: newId("invocation"),
      task: newId("task"),
    };
    await seed(run, false, null);
    const { account, lease } = await attempt(run, false);
    expect((await ask(lease.token, "hello")).status).toBe(200);
    await account.close();
    const { rows } = await pool.query("SELECT 1 FROM svc.recorded_answers WHERE invocation_id = $1", [
      run.invocation,
    ]);
    expect(rows).toEqual([]);
  });

  it("answers the candidate from the recording in call order, never calling the API, and counts replayed, diverged and missing calls", async () => {
    const heard = api.seen(KEY).length;
    const { account, lease } = await attempt(ids.candidate, true);
    // the same request as the live run's first: the same stream, byte for byte
    const first = await ask(lease.token, "review with line 25 in mind");
    expect(first.status).toBe(200);
    expect(first.headers["content-type"]).toBe("text/event-stream");
    expect(first.text).toBe(STREAM.join(""));
    // another prompt: still the recorded answer (redacted as it was recorded)
    const second = await ask(lease.token, "a different prompt", false);
    expect(second.status).toBe(200);
    expect(JSON.parse(second.text).content[0].text).toBe("run it with Authorization: Bearer [redacted]");
    // past the recording: the model's failure, in the API's shape
    const third = await ask(lease.token, "one more");
    expect(third.status).toBe(400);
    expect(JSON.parse(third.text)).toMatchObject({ type: "error", error: { type: "invalid_request_error" } });
    expect(JSON.parse(third.text).error.message).toContain("has none for model call 3");
    const spent = await account.close();

    expect(api.seen(KEY)).toHaveLength(heard);
    // replayed calls cost nothing
    expect(spent.requests).toBe(0);
    const { rows } = await pool.query(
      "SELECT call, outcome FROM svc.replayed_calls WHERE invocation_id = $1 ORDER BY call",
      [ids.candidate.invocation],
    );
    expect(rows).toEqual([
      { call: 1, outcome: "replayed" },
      { call: 2, outcome: "diverged" },
      { call: 3, outcome: "missing" },
    ]);
    // a candidate run is never recorded in turn
    const { rows: recorded } = await pool.query(
      "SELECT 1 FROM svc.recorded_answers WHERE invocation_id = $1",
      [ids.candidate.invocation],
    );
    expect(recorded).toEqual([]);
  });

  it("recorded answers are deleted with transcripts, after workspaces.transcriptRetentionDays", async () => {
    // the live run's second answer recorded long ago; its first today
    await pool.query(
      "UPDATE svc.recorded_answers SET created_at = now() - interval '31 days' WHERE invocation_id = $1 AND call = 2",
      [ids.live.invocation],
    );
    const workspaces = {
      checkoutRetentionDays: 7,
      transcriptRetentionDays: 30,
      repoCache: { maxSizeBytes: 1024 ** 3 },
    };
    await sweepWorkspaces(pool, { dir: "/nonexistent-svc-config", workspaces });
    const { rows } = await pool.query("SELECT call FROM svc.recorded_answers WHERE invocation_id = $1", [
      ids.live.invocation,
    ]);
    expect(rows).toEqual([{ call: 1 }]);
  });
});
