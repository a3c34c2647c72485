import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { issueSandboxToken } from "../../../db/api_tokens.ts";
import { DISPATCH_QUEUE, LOCAL_LANE, laneQueue } from "../../../shared/queues.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import {
  type ApiHarness,
  apiConfig,
  type SeededLineage,
  seedLineage,
  startApi,
  tokensBlock,
} from "./support.ts";

/** Behaviour of the daemon API's routes beyond access control, over the real app and database. */
let db: TestDatabase;
let api: ApiHarness;
let done: SeededLineage;
let failed: SeededLineage;
const STAR = "secret-star";

/** A POST to the tool protocol as a Streamable HTTP client sends it (the Accept header it requires). */
function mcpPost(token: string, body: unknown): Promise<Response> {
  return fetch(`${api.url}/mcp`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
    },
    body: JSON.stringify(body),
  });
}

async function json<T = Record<string, unknown>>(response: Response): Promise<T> {
  return (await response.json()) as T;
}

async function dispatchJobs(triggerId: string): Promise<number> {
  const { rows } = await api.pool.query(
    "SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1 AND data->>'triggerId' = $2",
    [DISPATCH_QUEUE, triggerId],
  );
  return rows[0].n;
}

async function triggerCount(): Promise<number> {
  return (await api.pool.query("SELECT count(*)::int AS n FROM svc.triggers")).rows[0].n;
}

beforeAll(async () => {
  db = await createTestDatabase(inject("adminDatabaseUrl"));
  api = await startApi(
    db.url,
    apiConfig({ tokens: tokensBlock({ star: ["*"], firer: ["pipelines:invoke"] }) }),
  );
  done = await seedLineage(api.pool);
  failed = await seedLineage(api.pool, { failed: true });
});

afterAll(async () => {
  await api?.close();
  await db?.drop();
});

describe("triggers", () => {
  it("lists without payload, filters by status and code, and pages with a cursor", async () => {
    const all = await json<{ triggers: Record<string, unknown>[]; nextCursor: string | null }>(
      await api.request("GET", "/triggers?limit=1", { token: STAR }),
    );
    expect(all.triggers).toHaveLength(1);
    expect(all.triggers[0]).not.toHaveProperty("payload");
    expect(all.nextCursor).toBeTruthy();
    const next = await json<{ triggers: { id: string }[] }>(
      await api.request("GET", `/triggers?limit=1&cursor=${all.nextCursor}`, { token: STAR }),
    );
    expect(next.triggers[0]!.id).not.toBe(all.triggers[0]!.id);
    const errors = await json<{ triggers: { id: string }[] }>(
      await api.request("GET", "/triggers?status=error&code=agent_timeout", { token: STAR }),
    );
    expect(errors.triggers.map((row) => row.id)).toEqual([failed.trigger]);
  });

  it("refuses status=timeout with the replacement, and other bad filters precisely", async () => {
    const timeout = await api.request("GET", "/triggers?status=timeout", { token: STAR });
    expect(timeout.status).toBe(400);
    expect((await json<{ error: { message: string } }>(timeout)).error.message).toContain("agent_timeout");
    expect((await api.request("GET", "/triggers?limit=0", { token: STAR })).status).toBe(400);
    expect((await api.request("GET", "/triggers?since=yesterday", { token: STAR })).status).toBe(400);
    expect((await api.request("GET", "/triggers?cursor=bogus", { token: STAR })).status).toBe(400);
  });

  it("one trigger carries payload and diagnostic, never the old error field", async () => {
    const body = await json<{ trigger: Record<string, unknown> }>(
      await api.request("GET", `/triggers/${failed.trigger}`, { token: STAR }),
    );
    expect(body.trigger.payload).toEqual({ ref: "main" });
    expect(body.trigger.diagnostic).toEqual({ code: "agent_timeout", message: "the agent ran past 20m" });
    expect(body.trigger).not.toHaveProperty("error");
  });

  it("stats group by code", async () => {
    const body = await json(
      await api.request("GET", "/triggers/stats?status=error&by=code", { token: STAR }),
    );
    expect(body).toMatchObject({ by: "code", total: 1, groups: [{ code: "agent_timeout", count: 1 }] });
    expect((await api.request("GET", "/triggers/stats?by=color", { token: STAR })).status).toBe(400);
  });
});

describe("trace", () => {
  it("walks from any kind of id to the same lineage", async () => {
    for (const id of [done.trigger, done.workload, done.invocation, done.task]) {
      const body = await json<
        Record<string, unknown> & { workload: { id: string }; artifacts: Record<string, unknown> }
      >(await api.request("GET", `/trace/${id}`, { token: STAR }));
      expect(body.resolved).toBe(id);
      expect((body.trigger as { id: string }).id).toBe(done.trigger);
      expect(body.workload.id).toBe(done.workload);
      expect(Object.keys(body.artifacts)).toEqual([done.invocation]);
    }
  });

  it("resolves a unique prefix and answers 409 with candidates for an ambiguous one", async () => {
    const a = await seedLineage(api.pool, { ids: { trigger: "trg_samepre2aaaaaaaaaaaaa" } });
    const b = await seedLineage(api.pool, { ids: { trigger: "trg_samepre2bbbbbbbbbbbbb" } });
    const unique = await json<{ resolved: string }>(
      await api.request("GET", "/trace/trg_samepre2a", { token: STAR }),
    );
    expect(unique.resolved).toBe(a.trigger);
    const ambiguous = await api.request("GET", "/trace/trg_samepre2", { token: STAR });
    expect(ambiguous.status).toBe(409);
    const body = await json<{ error: { code: string; candidates: string[] } }>(ambiguous);
    expect(body.error.code).toBe("ambiguous_id");
    expect(body.error.candidates).toEqual([a.trigger, b.trigger]);
  });

  it("refuses prefixes under six characters and unknown kinds; unknown ids are 404", async () => {
    expect((await api.request("GET", "/trace/trg_abcde", { token: STAR })).status).toBe(400);
    expect((await api.request("GET", "/trace/art_abcdefgh", { token: STAR })).status).toBe(400);
    expect((await api.request("GET", "/trace/trg_zzzzzzzz", { token: STAR })).status).toBe(404);
  });
});

describe("firing", () => {
  it("fires a pipeline with gated args: trigger and dispatch job together, owner = caller", async () => {
    const response = await api.request("POST", "/pipelines/nightly/fire", {
      token: "secret-firer",
      body: { args: { label: "bug" } },
    });
    expect(response.status).toBe(202);
    const { trigger } = await json<{ trigger: string }>(response);
    const { rows } = await api.pool.query(
      "SELECT kind, source, payload, owner FROM svc.triggers WHERE id = $1",
      [trigger],
    );
    expect(rows[0]).toEqual({
      kind: "manual",
      source: "nightly",
      payload: { args: { label: "bug" }, pipeline: "nightly" },
      owner: "token:firer",
    });
    expect(await dispatchJobs(trigger)).toBe(1);
  });

  it("bad args and unknown pipelines change nothing", async () => {
    const before = await triggerCount();
    for (const body of [
      { args: { label: 3 } },
      { args: {} },
      { args: { label: "x", extra: 1 } },
      { argz: {} },
    ]) {
      expect((await api.request("POST", "/pipelines/nightly/fire", { token: STAR, body })).status).toBe(400);
    }
    expect((await api.request("POST", "/pipelines/nope/fire", { token: STAR, body: {} })).status).toBe(404);
    expect(await triggerCount()).toBe(before);
  });

  it("replays a trigger with replay_of, dispatches a URL and runs a schedule now", async () => {
    const replay = await json<{ trigger: string }>(
      await api.request("POST", `/triggers/${done.trigger}/replay`, { token: STAR, body: {} }),
    );
    const replayRow = (
      await api.pool.query("SELECT kind, replay_of, payload FROM svc.triggers WHERE id = $1", [
        replay.trigger,
      ])
    ).rows[0];
    expect(replayRow).toEqual({ kind: "replay", replay_of: done.trigger, payload: { ref: "main" } });
    const dispatch = await api.request("POST", "/dispatch", {
      token: STAR,
      body: { pipeline: "plain", url: "https://github.com/acme/widgets/pull/7" },
    });
    expect(dispatch.status).toBe(202);
    expect(
      (
        await api.request("POST", "/dispatch", {
          token: STAR,
          body: { pipeline: "plain", url: "file:///etc/passwd" },
        })
      ).status,
    ).toBe(400);
    const schedule = await json<{ trigger: string }>(
      await api.request("POST", "/schedules/plain/run", { token: STAR, body: {} }),
    );
    expect(
      (await api.pool.query("SELECT kind FROM svc.triggers WHERE id = $1", [schedule.trigger])).rows[0].kind,
    ).toBe("schedule");
    for (const id of [replay.trigger, schedule.trigger]) expect(await dispatchJobs(id)).toBe(1);
  });
});

describe("admin", () => {
  it("drain and resume flip the shared flag", async () => {
    expect(await json(await api.request("POST", "/admin/drain", { token: STAR, body: {} }))).toMatchObject({
      drained: true,
      by: "token:star",
    });
    expect(
      (await api.pool.query("SELECT count(*)::int AS n FROM svc.daemon_state WHERE key = 'drain'")).rows[0].n,
    ).toBe(1);
    const doctor = await json<{ probes: { name: string; status: string }[] }>(
      await api.request("GET", "/admin/doctor", { token: STAR }),
    );
    expect(doctor.probes.find((probe) => probe.name === "drain")?.status).toBe("warning");
    expect(await json(await api.request("POST", "/admin/resume", { token: STAR, body: {} }))).toMatchObject({
      drained: false,
      wasDrained: true,
    });
    expect((await api.pool.query("SELECT count(*)::int AS n FROM svc.daemon_state")).rows[0].n).toBe(0);
  });

  it("reconcile re-sends a dispatch job for a queued trigger that lost its job", async () => {
    await api.pool.query(
      `INSERT INTO svc.triggers (id, kind, source, event_name, status, payload, created_at)
       VALUES ('trg_orphan2aaaaaaaaaaaaaa', 'webhook', 'deploy-hook', 'deploy-hook', 'queued', '{}', now() - interval '1 hour')`,
    );
    const body = await json<{ requeued: { triggers: string[] } }>(
      await api.request("POST", "/admin/reconcile", { token: STAR, body: {} }),
    );
    expect(body.requeued.triggers).toContain("trg_orphan2aaaaaaaaaaaaaa");
    expect(await dispatchJobs("trg_orphan2aaaaaaaaaaaaaa")).toBe(1);
    const again = await json<{ requeued: { triggers: string[] } }>(
      await api.request("POST", "/admin/reconcile", { token: STAR, body: {} }),
    );
    expect(again.requeued.triggers).not.toContain("trg_orphan2aaaaaaaaaaaaaa");
    expect(
      (await api.request("POST", "/admin/reconcile", { token: STAR, body: { olderThan: "soon" } })).status,
    ).toBe(400);
  });

  it("reconcile sends a lost job for a queued invocation on every lane, the local lane (no target) included", async () => {
    await api.pool.query(
      `INSERT INTO svc.triggers (id, kind, source, event_name, status, payload, created_at)
         VALUES ('trg_orphan3aaaaaaaaaaaaaa', 'webhook', 'deploy-hook', 'deploy-hook', 'running', '{}', now() - interval '1 hour');
       INSERT INTO svc.workloads (id, trigger_id, pipeline, status, workspace)
         VALUES ('run_orphan3aaaaaaaaaaaaaa', 'trg_orphan3aaaaaaaaaaaaaa', 'notes', 'open', '/tmp/x');
       INSERT INTO svc.invocations (id, workload_id, status, target, created_at)
         VALUES ('inv_orphan3aaaaaaaaaaaaaa', 'run_orphan3aaaaaaaaaaaaaa', 'queued', NULL, now() - interval '1 hour')`,
    );
    const body = await json<{ requeued: { invocations: string[] } }>(
      await api.request("POST", "/admin/reconcile", { token: STAR, body: {} }),
    );
    expect(body.requeued.invocations).toContain("inv_orphan3aaaaaaaaaaaaaa");
    const jobs = await api.boss.findJobs(LOCAL_LANE, { data: { invocationId: "inv_orphan3aaaaaaaaaaaaaa" } });
    expect(jobs).toHaveLength(1);
    const again = await json<{ requeued: { invocations: string[] } }>(
      await api.request("POST", "/admin/reconcile", { token: STAR, body: {} }),
    );
    expect(again.requeued.invocations).not.toContain("inv_orphan3aaaaaaaaaaaaaa");
  });

  it("queue status counts states; purge removes the failed history", async () => {
    const status = await json<{ counts: Record<string, number> }>(
      await api.request("GET", "/queue/status?verbose=1", { token: STAR }),
    );
    expect(status.counts.waiting).toBeGreaterThan(0);
    // two failed lane jobs, made through pg-boss's public API: sent without retries, fetched, failed
    const lane = laneQueue("purge-lane");
    await api.boss.createQueue(lane, { retryLimit: 0 });
    for (const n of [1, 2]) await api.boss.send(lane, { invocationId: `inv_purge${n}` });
    const fetched = await api.boss.fetch(lane, { batchSize: 2 });
    await api.boss.fail(
      lane,
      fetched.map((job) => job.id),
    );
    const before = await json<{ counts: Record<string, number> }>(
      await api.request("GET", "/queue/status", { token: STAR }),
    );
    expect(before.counts.failed).toBeGreaterThanOrEqual(2);
    const purge = await json<{ purged: number }>(
      await api.request("POST", "/admin/purge", { token: STAR, body: {} }),
    );
    expect(purge.purged).toBe(before.counts.failed);
    const after = await json<{ counts: Record<string, number> }>(
      await api.request("GET", "/queue/status", { token: STAR }),
    );
    expect(after.counts.failed).toBe(0);
    expect((await api.request("POST", "/admin/purge", { token: STAR, body: { before: 7 } })).status).toBe(
      400,
    );
  });
});

describe("host tools and the tool protocol", () => {
  it("runs a host tool without a shell: input becomes exactly one argv element", async () => {
    const response = await api.request("POST", "/host-tools/lint", {
      token: STAR,
      body: { input: { path: "a b; rm -rf /" } },
    });
    expect(response.status).toBe(200);
    expect(await json(response)).toMatchObject({
      tool: "lint",
      exitCode: 0,
      stdout: "checked a b; rm -rf /\n",
    });
    expect((await api.request("POST", "/host-tools/lint", { token: STAR, body: { input: {} } })).status).toBe(
      400,
    );
    expect((await api.request("POST", "/host-tools/nope", { token: STAR, body: {} })).status).toBe(404);
  });

  it("refuses an input that would be read as an option with 400 naming the tool and the field", async () => {
    const response = await api.request("POST", "/host-tools/lint", {
      token: STAR,
      body: { input: { path: "--help" } },
    });
    expect(response.status).toBe(400);
    expect(await json(response)).toMatchObject({
      error: {
        code: "invalid_request",
        message:
          'host tool lint: input path may not start with "-" (it would be read as an option); declare allow_options: true on input path to allow it',
      },
    });
    const nul = await api.request("POST", "/host-tools/lint", {
      token: STAR,
      body: { input: { path: "a\u0000b" } },
    });
    expect(nul.status).toBe(400);
    expect(await json(nul)).toMatchObject({
      error: { message: "host tool lint: input path contains a NUL byte" },
    });
  });

  it("refuses a sandboxed agent's token for host tools, directly and over MCP", async () => {
    const sandbox = await issueSandboxToken(api.pool, { invocationId: done.invocation, scopes: ["*"] });
    expect(
      (
        await api.request("POST", "/host-tools/lint", {
          token: sandbox.token,
          body: { input: { path: "x" } },
        })
      ).status,
    ).toBe(403);
    const call = await mcpPost(sandbox.token, {
      jsonrpc: "2.0",
      id: 7,
      method: "tools/call",
      params: { name: "host_lint", arguments: { path: "x" } },
    });
    expect(await json(call)).toEqual({
      jsonrpc: "2.0",
      id: 7,
      error: { code: -32001, message: "Forbidden" },
    });
    const list = await mcpPost(sandbox.token, { jsonrpc: "2.0", id: 8, method: "tools/list" });
    expect(list.status).toBe(200);
    const names = (await json<{ result: { tools: { name: string }[] } }>(list)).result.tools.map(
      (t) => t.name,
    );
    expect(names).not.toContain("host_lint");
  });

  it("lists host tools as host_<name> and calls them with *", async () => {
    const list = await json<{ result: { tools: { name: string }[] } }>(
      await mcpPost(STAR, { jsonrpc: "2.0", id: 1, method: "tools/list" }),
    );
    expect(list.result.tools.map((tool) => tool.name)).toContain("host_lint");
    const call = await json<{ result: { structuredContent: Record<string, unknown>; isError?: boolean } }>(
      await mcpPost(STAR, {
        jsonrpc: "2.0",
        id: 2,
        method: "tools/call",
        params: { name: "host_lint", arguments: { path: "src" } },
      }),
    );
    expect(call.result.isError).toBeFalsy();
    expect(call.result.structuredContent).toMatchObject({ exitCode: 0, stdout: "checked src\n" });
  });
});
