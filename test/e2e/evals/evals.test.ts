import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { PgBoss } from "pg-boss";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBoss } from "../../../db/boss.ts";
import type { ConfigSnapshot } from "../../../shared/config/types.ts";
import { fisherExact } from "../../../shared/statistics.ts";
import { type RunningWorker, startWorker } from "../../../worker/main.ts";
import { type ApiHarness, startApi, tokensBlock } from "../../integration/api/support.ts";
import {
  captureLogger,
  commandTarget,
  fire,
  makeConfig,
  openTestBed,
  pipeline,
  type TestBed,
  waitFor,
  writeScript,
} from "../../integration/worker/helpers.ts";

/**
 * The eval workflow end to end: real workers run two versions of a pipeline on the project's
 * pull_request fixture, through a command agent that fails one pull request in FAIL_EVERY
 * (10 for 1.2.0: 9 of 10 succeed; 2 for 1.3.0: 5 of 10). The daemon API then compares the
 * versions, curates cases, replays them into an eval run and reads that run back.
 */
const FIXTURE = join(
  import.meta.dirname,
  "../../../ingress/webhooks/codehost/fixtures/pull_request/opened.payload.json",
);
const TOKEN = "secret-evaluator";

let bed: TestBed;
let boss: PgBoss;
let worker: RunningWorker | undefined;
let api: ApiHarness;
let fixture: Record<string, unknown> & { pull_request: Record<string, unknown> };

function configAt(version: string, failEvery: number): ConfigSnapshot {
  const versioned = (name: string, action: string) =>
    pipeline(name, {
      version,
      agent: "helper",
      env: { FAIL_EVERY: String(failEvery) },
      targets: ["loopback"],
      retainCheckout: false,
      trigger: { webhook: [], codehost: [{ events: [`pull_request.${action}`], repos: [] }], tracker: [] },
    });
  return makeConfig(bed.dir, {
    targets: { loopback: commandTarget("loopback", ["./bin/agent"]) },
    pipelines: {
      "pr-review": versioned("pr-review", "opened"),
      "pr-small": versioned("pr-small", "reopened"),
    },
    auth: {
      tokens: tokensBlock({ evaluator: ["evals:write", "pipelines:invoke"], curator: ["evals:write"] }),
    },
    worker: { concurrency: 4, graceMs: 2_000 },
  });
}

/** The fixture's pull request renumbered; the agent reads the number from PAYLOAD_JSON. */
function event(number: number, action: string) {
  return { ...fixture, action, number, pull_request: { ...fixture.pull_request, number } };
}

async function runVersion(version: string, failEvery: number, opened: number, reopened: number) {
  await worker?.stop(2_000);
  worker = await startWorker({
    config: configAt(version, failEvery),
    databaseUrl: bed.database.url,
    logger: captureLogger().logger,
    heartbeatMs: 500,
  });
  const fired: string[] = [];
  for (const [action, count] of [
    ["opened", opened],
    ["reopened", reopened],
  ] as const)
    for (let n = 1; n <= count; n++)
      fired.push(
        await fire(bed.pool, boss, {
          kind: "codehost",
          source: "github",
          eventName: `pull_request.${action}`,
          payload: event(n, action),
        }),
      );
  await settled(fired);
}

async function settled(triggers: string[]) {
  await waitFor(
    async () => {
      const { rows } = await bed.pool.query(
        "SELECT count(*)::int AS n FROM svc.triggers WHERE id = ANY($1) AND status IN ('completed', 'error', 'discarded')",
        [triggers],
      );
      return rows[0].n === triggers.length ? true : undefined;
    },
    `${triggers.length} triggers to finish`,
    60_000,
  );
}

async function call(method: string, path: string, body?: unknown, token = TOKEN) {
  const response = await api.request(method, path, { token, ...(body === undefined ? {} : { body }) });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

async function invocationOf(pipelineName: string, version: string, number: number): Promise<string> {
  const { rows } = await bed.pool.query(
    `SELECT i.id FROM svc.invocations i JOIN svc.workloads w ON w.id = i.workload_id JOIN svc.triggers t ON t.id = w.trigger_id
      WHERE w.pipeline = $1 AND w.pipeline_version = $2 AND (t.payload->>'number')::int = $3 AND t.eval_run_id IS NULL`,
    [pipelineName, version, number],
  );
  return rows[0].id;
}

beforeAll(async () => {
  fixture = JSON.parse(await readFile(FIXTURE, "utf8"));
  bed = await openTestBed();
  await writeScript(
    join(bed.dir, "bin", "agent"),
    `#!/bin/sh
cat > /dev/null
n=$(printf '%s' "$PAYLOAD_JSON" | sed 's/^{"action":"[a-z]*","number":\\([0-9]*\\),.*/\\1/')
if [ $((n % FAIL_EVERY)) -eq 0 ]; then echo "pull request $n: giving up" >&2; exit 1; fi
echo '{"verdict": "approve", "number": '"$n"'}'
`,
  );
  boss = await startBoss({ url: bed.database.url, supervise: false });
  await runVersion("1.2.0", 10, 40, 5);
  await runVersion("1.3.0", 2, 40, 5);
  api = await startApi(bed.database.url, configAt("1.3.0", 2));
}, 180_000);

afterAll(async () => {
  await worker?.stop(2_000);
  await api?.close();
  await boss?.stop({ graceful: false });
  await bed?.close();
});

describe("every run records its pipeline version", () => {
  it("40 runs of each version of pr-review, with the loopback agent's success rates", async () => {
    const { rows } = await bed.pool.query(
      `SELECT w.pipeline_version AS version, count(*)::int AS runs, (count(*) FILTER (WHERE i.status = 'completed'))::int AS completed
         FROM svc.workloads w JOIN svc.invocations i ON i.workload_id = w.id WHERE w.pipeline = 'pr-review'
        GROUP BY 1 ORDER BY 1`,
    );
    expect(rows).toEqual([
      { version: "1.2.0", runs: 40, completed: 36 },
      { version: "1.3.0", runs: 40, completed: 20 },
    ]);
  });
});

describe("GET /evals/compare", () => {
  it("finds the difference between 40 runs of each version significant", async () => {
    const { status, body } = await call(
      "GET",
      "/evals/compare?pipeline=pr-review&a=version:1.2.0&b=version:1.3.0",
    );
    expect(status).toBe(200);
    expect(body.tooSmall).toBe(false);
    const completed = body.rates.find((rate: { name: string }) => rate.name === "completed");
    expect(completed.a).toMatchObject({ count: 36, n: 40, rate: 0.9 });
    expect(completed.b).toMatchObject({ count: 20, n: 40, rate: 0.5 });
    // Wilson 95% for 36/40 and 20/40
    expect(completed.a.interval.low).toBeCloseTo(0.7695, 4);
    expect(completed.b.interval.high).toBeCloseTo(0.648, 4);
    expect(completed).toMatchObject({ test: "chi_square", significant: true });
    expect(completed.p).toBeCloseTo(9.477e-5, 7);
    expect(body.duration).toMatchObject({ test: "mann_whitney", a: { n: 40 }, b: { n: 40 } });
    expect(body.duration.p).toBeGreaterThan(0);
    // durations compared as numbers: Postgres' numeric would arrive as strings and sort as text
    expect(body.duration.a.p50Ms).toEqual(expect.any(Number));
    expect(body.duration.b.p50Ms).toEqual(expect.any(Number));
    expect(body.verdict).toMatch(/^significant at the 5% level: completed rate 90\.0% \(a\) vs 50\.0% \(b\)/);
  });

  it("says the cohorts are too small to conclude with 5 runs each", async () => {
    const { body } = await call("GET", "/evals/compare?pipeline=pr-small&a=version:1.2.0&b=version:1.3.0");
    expect(body.a.runs).toBe(5);
    expect(body.b.runs).toBe(5);
    expect(body.tooSmall).toBe(true);
    expect(body.verdict).toBe(
      "too small to conclude: cohort a has 5 runs and cohort b has 5; each needs at least 10",
    );
    const completed = body.rates.find((rate: { name: string }) => rate.name === "completed");
    // 5/5 against 3/5 (4 and 2 fail): the exact test still answers, but no verdict is drawn
    expect(completed).toMatchObject({ test: "fisher_exact", significant: null });
    expect(completed.p).toBeCloseTo(
      fisherExact(completed.a.count, 5 - completed.a.count, completed.b.count, 5 - completed.b.count),
      10,
    );
  });

  it("needs the pipeline named when the daemon runs more than one", async () => {
    const { status, body } = await call("GET", "/evals/compare?a=version:1.2.0&b=version:1.3.0");
    expect(status).toBe(400);
    expect(body.error.message).toBe(
      'query parameter "pipeline" is required: the daemon runs 2 pipelines (pr-review, pr-small)',
    );
  });

  it("answers 404 for a pipeline neither configured nor ever run", async () => {
    const { status, body } = await call("GET", "/evals/stats?pipeline=pr-reveiw");
    expect(status).toBe(404);
    expect(body.error.message).toBe("no such pipeline");
  });

  it("refuses a malformed cohort with the forms it accepts", async () => {
    const { status, body } = await call("GET", "/evals/compare?pipeline=pr-review&a=version:1.2.0&b=1.3.0");
    expect(status).toBe(400);
    expect(body.error.message).toBe(
      '"b" must be a cohort such as version:1.2.0, target:<name>, dates:2026-11-01..2026-11-15, run:evr_…, original:evr_… or cases[:<tag>] (got "1.3.0")',
    );
  });
});

describe("curating, replaying and reading back an eval run", () => {
  const cases: string[] = [];

  it("curates 10 finished runs of 1.2.0 as cases expected to pass", async () => {
    for (let n = 1; n <= 10; n++) {
      const { status, body } = await call("POST", "/evals", {
        invocation: await invocationOf("pr-review", "1.2.0", n),
        expected: "pass",
        tags: ["smoke"],
        notes: n === 1 ? "<script>alert(1)</script>" : `case ${n}`,
      });
      expect(status).toBe(201);
      expect(body.eval).toMatchObject({
        pipeline: "pr-review",
        pipelineVersion: "1.2.0",
        target: "loopback",
        observed: n === 10 ? "fail" : "pass",
        observedCode: n === 10 ? "agent_failed" : null,
        expected: "pass",
        event: { kind: "codehost", source: "github", name: "pull_request.opened" },
      });
      expect(body.eval.event.payload.number).toBe(n);
      cases.push(body.eval.id);
    }
    const listed = await call("GET", "/evals?pipeline=pr-review&tag=smoke&outcome=pass");
    expect(listed.body.evals).toHaveLength(10);
    expect((await call("GET", "/evals?outcome=fail")).body.evals).toHaveLength(0);
  });

  it("replays them through the pipeline as configured now and compares against their original runs", async () => {
    const refused = await call(
      "POST",
      "/evals/run",
      { pipeline: "pr-review", tag: "smoke" },
      "secret-curator",
    );
    expect(refused.status).toBe(403);
    const started = await call("POST", "/evals/run", { pipeline: "pr-review", tag: "smoke" });
    expect(started.status).toBe(202);
    const run = started.body.evalRun;
    expect(run).toMatchObject({ pipeline: "pr-review", pipelineVersion: "1.3.0" });
    expect(run.cases.map((entry: { case: string }) => entry.case).sort()).toEqual([...cases].sort());
    await settled(run.cases.map((entry: { trigger: string }) => entry.trigger));

    // the replays ran pr-review alone, at the configured version, marked with the eval run
    const { rows } = await bed.pool.query(
      `SELECT t.kind, t.eval_run_id, w.pipeline, w.pipeline_version FROM svc.triggers t JOIN svc.workloads w ON w.trigger_id = t.id
        WHERE t.eval_run_id = $1`,
      [run.id],
    );
    expect(rows).toHaveLength(10);
    expect(new Set(rows.map((row) => `${row.kind} ${row.pipeline} ${row.pipeline_version}`))).toEqual(
      new Set(["replay pr-review 1.3.0"]),
    );

    const { body } = await call("GET", started.body.compare);
    expect(body.a).toEqual({ cohort: `original:${run.id}`, runs: 10 });
    expect(body.b).toEqual({ cohort: `run:${run.id}`, runs: 10 });
    const agreement = body.rates.find((rate: { name: string }) => rate.name === "agreement");
    expect(agreement.a).toMatchObject({ count: 9, n: 10 });
    expect(agreement.b).toMatchObject({ count: 5, n: 10 });
    expect(agreement.test).toBe("fisher_exact");
    expect(agreement.p).toBeCloseTo(0.1409, 4);
    expect(agreement.significant).toBe(false);
    // durations depend on the machine's load, so only the rates' verdict is fixed here
    expect(body.verdict).not.toMatch(/agreement rate|completed rate|NaN/);
    expect(body.duration.a.p50Ms).toEqual(expect.any(Number));
    expect(body.duration.b.p50Ms).toEqual(expect.any(Number));
  });

  it("reports statistics per version × target with the agreement of cases and of the eval run", async () => {
    const { status, body } = await call("GET", "/evals/stats?pipeline=pr-review");
    expect(status).toBe(200);
    const byVersion = Object.fromEntries(body.versions.map((row: { version: string }) => [row.version, row]));
    expect(byVersion["1.2.0"]).toMatchObject({
      target: "loopback",
      runs: 40,
      completed: { count: 36 },
      codes: { agent_failed: 4 },
    });
    // 40 runs fired plus the 10 replays
    expect(byVersion["1.3.0"]).toMatchObject({
      runs: 50,
      completed: { count: 25 },
      outputFailed: { count: 0 },
      tokens: null,
    });
    expect(byVersion["1.3.0"].p50Ms).toBeGreaterThan(0);
    expect(byVersion["1.3.0"].p90Ms).toBeGreaterThanOrEqual(byVersion["1.3.0"].p50Ms);
    expect(body.agreement).toMatchObject({ count: 9, n: 10, rate: 0.9 });
    expect(body.evalRuns).toHaveLength(1);
    expect(body.evalRuns[0]).toMatchObject({ cases: 10, finished: 10, agreement: { count: 5, n: 10 } });
  });

  it("edits and deletes a case; an expected result field changes agreement", async () => {
    const id = cases[0]!;
    const patched = await call("PATCH", `/evals/${id}`, {
      expectedResult: { verdict: "reject" },
      tags: ["smoke", "edge"],
    });
    expect(patched.status).toBe(200);
    expect(patched.body.eval).toMatchObject({
      expectedResult: { verdict: "reject" },
      tags: ["smoke", "edge"],
    });
    expect(patched.body.eval.notes).toBe("<script>alert(1)</script>");
    const stats = await call("GET", "/evals/stats?pipeline=pr-review");
    expect(stats.body.agreement).toMatchObject({ count: 8, n: 10 });
    expect((await call("PATCH", `/evals/${id}`, { expected: "maybe" })).body.error.message).toBe(
      '"expected" must be "pass" or "fail"',
    );
    expect((await call("DELETE", `/evals/${cases[9]}`)).status).toBe(204);
    expect((await call("GET", `/evals/${cases[9]}`)).status).toBe(404);
    expect((await call("DELETE", `/evals/${cases[9]}`)).status).toBe(404);
  });

  it("refuses to curate what is not a finished run", async () => {
    const unknown = await call("POST", "/evals", {
      invocation: "inv_aaaaaaaaaaaaaaaaaaaa",
      expected: "pass",
    });
    expect(unknown.status).toBe(404);
    const noId = await call("POST", "/evals", { expected: "pass" });
    expect(noId.body.error.message).toBe('"invocation" must be an invocation id (inv_…) of a finished run');
    const extra = await call("POST", "/evals", {
      invocation: "inv_aaaaaaaaaaaaaaaaaaaa",
      expected: "pass",
      outcome: "x",
    });
    expect(extra.body.error.message).toBe(
      'unknown field "outcome"; allowed: invocation, expected, expectedResult, notes, tags',
    );
    const workload = await bed.pool.query(
      "INSERT INTO svc.workloads (id, pipeline, status) VALUES ('run_submittedaaaaaaaaaaa', 'pr-review', 'completed')",
    );
    expect(workload.rowCount).toBe(1);
    await bed.pool.query(
      "INSERT INTO svc.invocations (id, workload_id, status, started_at, finished_at) VALUES ('inv_submittedaaaaaaaaaaa', 'run_submittedaaaaaaaaaaa', 'completed', now(), now())",
    );
    const submitted = await call("POST", "/evals", {
      invocation: "inv_submittedaaaaaaaaaaa",
      expected: "pass",
    });
    expect(submitted.status).toBe(409);
    expect(submitted.body.error.code).toBe("invocation_without_event");
    await bed.pool.query("DELETE FROM svc.invocations WHERE id = 'inv_submittedaaaaaaaaaaa'");
    await bed.pool.query("DELETE FROM svc.workloads WHERE id = 'run_submittedaaaaaaaaaaa'");
    const none = await call("POST", "/evals/run", { pipeline: "pr-small" });
    expect(none.status).toBe(400);
    expect(none.body.error.message).toBe(
      "pipeline pr-small has no curated cases; curate one with POST /evals { invocation, expected }",
    );
  });
});
