// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} is the configuration substitution syntax
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { waitFor } from "../../integration/worker/helpers.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { svc } from "../cli/support.ts";
import { FakeModelApi, USAGE_PER_CALL } from "../worker/fake-model-api.ts";
import {
  postWebhook,
  type RoleProcess,
  startIngress,
  startWorkerProcess,
  writeConfigDir,
} from "../worker/processes.ts";
import { type FakeGitHub, startFakeGitHub } from "./fake-github.ts";
import { FILES_V1, FILES_V2 } from "./sticky-bed.ts";

/**
 * Issue 57, what shadowing costs: the live version of a review pipeline and its shadow candidate
 * run on priced `openai` targets against the loopback model API (the live one on a dearer model,
 * the candidate on a cheaper one, each answered by its own instructions with its own findings), and
 * publish to the loopback GitHub. Eight pull requests are reviewed; on two of them people act (a
 * push changes a live finding's lines and its author resolves it, a member resolves another
 * unchanged, a member gives a third a 👎) and the pull requests are reviewed again. A `control`
 * pipeline, the live version without a shadow, reviews the same pull requests of another
 * repository with the same people's acts: what it posts is what the live version must post.
 * `svc eval compare --shadow` then states tokens and cost per run as the gateway's ledger has them
 * (svc.tasks.usage) and the cost of shadowing as a share of the live runs' cost.
 */
const HOOK_TOKEN = "e2e-shadow-cost-hook";
const CODEHOST_TOKEN = "ghs_shadowCostIdentity0001";
const MODEL_KEY = "sk-shadow-cost-0001";
const REPO = "acme/widgets";
const CONTROL_REPO = "acme/control";
/** USD per million tokens: the live model's answer (120 in, 30 out) costs $0.18, the candidate's $0.06 */
const LIVE_PRICE = { input: 1000, output: 2000 };
const NEXT_PRICE = { input: 250, output: 1000 };
const perCall = (price: { input: number; output: number }) =>
  (USAGE_PER_CALL.prompt_tokens * price.input + USAGE_PER_CALL.completion_tokens * price.output) / 1e6;

const LIVE_INSTRUCTIONS = "Review the pull request.";
const NEXT_INSTRUCTIONS = "Review the pull request, naming the risk first.";
const PULLS = [1, 2, 3, 4, 5, 6, 7, 8];
/** the pull requests people act on, then reviewed again */
const AGAIN = [1, 2];
const SHA = ["1111111", "2222222"].map((prefix) => `${prefix}${"abcdef0".repeat(5)}`.slice(0, 40));

/** What each version finds: the live one lines 2 and 21, the candidate lines 2 and 22 (none on 21). */
const FINDINGS = {
  live: [
    [
      { path: "src/app.js", line: 2, body: "nm is a poor name" },
      { path: "src/app.js", line: 21, body: "b() can throw here" },
    ],
    [{ path: "src/app.js", line: 2, body: "this binding is never reassigned: make it const" }],
  ],
  candidate: [
    [
      { path: "src/app.js", line: 2, body: "CANDIDATE: rename nm, the name says nothing" },
      { path: "src/app.js", line: 22, body: "CANDIDATE: c is never used" },
    ],
    [{ path: "src/app.js", line: 2, body: "CANDIDATE: could be const" }],
  ],
};

const OUTPUTS = `result:
  schema:
    type: object
    properties:
      review: { $ref: svc://schemas/codehost/review/v1 }
    required: [review]
outputs:
  review: { handler: codehost.review }
`;
const livePipeline = (hook: string, target: string, shadow: string) => `version: 3.1.0
agent: reviewer
trigger:
  webhook: [${hook}]
targets: [${target}]
instructions: ${LIVE_INSTRUCTIONS}
${shadow}${OUTPUTS}`;

interface Ledger {
  invocation: string;
  trigger: string;
  shadow: boolean;
  tokens: number;
  cost: number;
}

describe("what shadowing costs, from the gateway's ledger", { timeout: 300_000 }, () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  let dir: string;
  let home: string;
  let github: FakeGitHub;
  let ingress: RoleProcess;
  let worker: RoleProcess;
  let url: string;
  const model = new FakeModelApi();
  /** the review round the model answers for (1, then 2 once people acted) */
  let round = 0;
  /** each chat completion: whether it carried the candidate's instructions, and the model it named */
  const calls: { candidate: boolean; model: unknown }[] = [];

  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    await model.start();
    model.answer(MODEL_KEY, {
      status: 200,
      reply: (body) => {
        const candidate = JSON.stringify(body.messages ?? "").includes(NEXT_INSTRUCTIONS);
        calls.push({ candidate, model: body.model });
        const comments = FINDINGS[candidate ? "candidate" : "live"][round - 1]!;
        const text = candidate ? "CANDIDATE: the risk first." : "Live review.";
        return {
          role: "assistant",
          content: JSON.stringify({ review: { event: "COMMENT", body: text, comments } }),
        };
      },
    });
    github = await startFakeGitHub({ users: { [CODEHOST_TOKEN]: "svc-bot" } });
    for (const repo of [REPO, CONTROL_REPO]) {
      github.collaborators.set(repo, new Map([["maintainer", "write"]]));
      for (const number of PULLS) github.files.set(`${repo}#${number}`, FILES_V1);
    }
    dir = await writeConfigDir({
      "daemon.yaml": `webhooks:
  sources:
    review-hook: { verify: bearer, secret: "\${HOOK_TOKEN}" }
    control-hook: { verify: bearer, secret: "\${HOOK_TOKEN}" }
targets:
  live-model:
    runtime: openai
    base_url: ${model.url}
    model: big-model
    timeout: 60s
    credentials: [{ name: a, secret: ${MODEL_KEY} }]
    price: { input: ${LIVE_PRICE.input}, output: ${LIVE_PRICE.output} }
  next-model:
    runtime: openai
    base_url: ${model.url}
    model: small-model
    timeout: 60s
    credentials: [{ name: a, secret: ${MODEL_KEY} }]
    price: { input: ${NEXT_PRICE.input}, output: ${NEXT_PRICE.output} }
  control-model:
    runtime: openai
    base_url: ${model.url}
    model: control-model
    timeout: 60s
    credentials: [{ name: a, secret: ${MODEL_KEY} }]
    price: { input: ${LIVE_PRICE.input}, output: ${LIVE_PRICE.output} }
  local: { runtime: command, command: [/bin/cat] }
ask:
  targets: [local]
codehost:
  api_url: ${github.url}
  token: \${CODEHOST_TOKEN}
`,
      "agents/reviewer/PERSONA.md": "---\nname: reviewer\ndescription: Reviews.\n---\nYou review.\n",
      "pipelines/review.yaml": livePipeline(
        "review-hook",
        "live-model",
        "shadow: { version_file: pipelines/review.next.yaml, share: 1 }\n",
      ),
      "pipelines/review.next.yaml": `version: 3.2.0-next.1
agent: reviewer
trigger:
  webhook: [review-hook]
targets: [next-model]
instructions: ${NEXT_INSTRUCTIONS}
${OUTPUTS}`,
      // the live version as it would run without a shadow, on its own repository's pull requests
      "pipelines/control.yaml": livePipeline("control-hook", "control-model", ""),
    });
    const env = { SVC_CONFIG_DIR: dir, SVC_DATABASE_URL: database.url, HOOK_TOKEN, CODEHOST_TOKEN };
    ({ role: ingress, url } = await startIngress(env));
    worker = await startWorkerProcess(env);
    pool = new pg.Pool({ connectionString: database.url, max: 2 });
    home = await mkdtemp(join(tmpdir(), "svc-shadow-cost-"));
  }, 120_000);

  afterAll(async () => {
    await worker?.stop();
    await ingress?.stop();
    await pool?.end();
    await database?.drop();
    await github?.close();
    await model.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
    if (home) await rm(home, { recursive: true, force: true });
  });

  /** One review round: every pull request of both repositories, and each trigger's runs to end. */
  async function reviewRound(numbers: number[]): Promise<void> {
    round += 1;
    const fired: { trigger: string; runs: number }[] = [];
    for (const number of numbers)
      for (const [hook, repo, runs] of [
        ["review-hook", REPO, 2],
        ["control-hook", CONTROL_REPO, 1],
      ] as const) {
        const trigger = await postWebhook(url, hook, HOOK_TOKEN, {
          repository: { full_name: repo },
          pull_request: { number, head: { sha: SHA[round - 1], ref: "feature" } },
        });
        fired.push({ trigger, runs });
      }
    // the bound only stops a hung test: up to 24 runs share the machine's cores
    await waitFor(
      async () => {
        const { rows } = await pool.query<{ trigger: string; status: string }>(
          `SELECT w.trigger_id AS trigger, i.status FROM svc.invocations i
           JOIN svc.workloads w ON w.id = i.workload_id WHERE w.trigger_id = ANY($1::text[])`,
          [fired.map((entry) => entry.trigger)],
        );
        return fired.every(
          ({ trigger, runs }) =>
            rows.filter((row) => row.trigger === trigger && ["completed", "failed"].includes(row.status))
              .length === runs,
        );
      },
      `the runs of round ${round} to end`,
      240_000,
    );
  }

  /** What people do on `repo` between the reviews (the same on both repositories). */
  function peopleAct(repo: string): void {
    const onLine = (pull: string, line: number) => {
      const comment = github.reviewComments.get(pull)!.find((c) => c.original_line === line)!;
      return github.threads.find((thread) => thread.commentId === comment.id)!;
    };
    // the author changes line 2 of #1 and resolves its thread; a member resolves line 21's unchanged
    github.pushFiles(`${repo}#1`, FILES_V2);
    expect(onLine(`${repo}#1`, 2).isOutdated).toBe(true);
    Object.assign(onLine(`${repo}#1`, 2), { isResolved: true, resolvedBy: "octo-author" });
    Object.assign(onLine(`${repo}#1`, 21), { isResolved: true, resolvedBy: "maintainer" });
    // a member gives #2's line 21 a 👎
    github.reviewReactions.set(onLine(`${repo}#2`, 21).commentId!, [
      {
        id: 1,
        node_id: `REA_${repo}`,
        user: { login: "maintainer", id: 77, type: "User" },
        content: "-1",
        created_at: new Date().toISOString(),
      },
    ]);
  }

  /** Each run of pipeline `review`, with what the gateway recorded on its tasks. */
  async function ledger(): Promise<Ledger[]> {
    const { rows } = await pool.query<{
      invocation: string;
      trigger: string;
      shadow: boolean;
      usage: Record<string, number> | null;
    }>(
      `SELECT i.id AS invocation, w.trigger_id AS trigger, i.shadow, k.usage
         FROM svc.invocations i JOIN svc.workloads w ON w.id = i.workload_id
         LEFT JOIN svc.tasks k ON k.invocation_id = i.id
        WHERE w.pipeline = 'review' ORDER BY i.id`,
    );
    const runs = new Map<string, Ledger>();
    for (const { invocation, trigger, shadow, usage } of rows) {
      const run = runs.get(invocation) ?? { invocation, trigger, shadow, tokens: 0, cost: 0 };
      run.tokens += (usage?.input_tokens ?? 0) + (usage?.output_tokens ?? 0);
      run.cost += usage?.cost_usd ?? 0;
      runs.set(invocation, run);
    }
    return [...runs.values()];
  }

  /** A repository's writes to GitHub per pull request, without what differs by run (ids, markers). */
  function writesOf(repo: string, number: number): string[] {
    const prefix = `/repos/${repo}/`;
    return github.requests
      .filter(
        (r) =>
          r.method !== "GET" &&
          r.path.startsWith(prefix) &&
          new RegExp(`^/repos/${repo}/(pulls|issues)/${number}(/|$)`).test(r.path),
      )
      .map((r) =>
        `${r.method} ${r.path.slice(prefix.length)} ${JSON.stringify(r.body ?? null)}`
          .replace(/<!-- svc:inv_[^>]*-->/g, "<!-- svc:marker -->")
          .replace(/\b(trg|inv)_[a-z2-7]+/g, "$1_id")
          .replace(/<sub>control 3\.1\.0 /g, "<sub>review 3.1.0 "),
      );
  }

  it("the live version posts what it would without a shadow; the candidate's findings never reach GitHub", async () => {
    await reviewRound(PULLS);
    peopleAct(REPO);
    peopleAct(CONTROL_REPO);
    await reviewRound(AGAIN);

    // each version was answered by its own instructions, on its own target's model
    expect(calls.filter((call) => call.candidate).every((call) => call.model === "small-model")).toBe(true);
    expect(calls.filter((call) => !call.candidate).every((call) => call.model !== "small-model")).toBe(true);
    expect(calls.filter((call) => call.candidate).length).toBe(PULLS.length + AGAIN.length);

    // nothing of the candidate's in any request svc sent GitHub
    for (const request of github.requests.filter((r) => r.method !== "GET"))
      expect(JSON.stringify(request.body ?? "")).not.toContain("CANDIDATE");
    for (const number of PULLS) {
      const writes = writesOf(REPO, number);
      expect(writes.length).toBeGreaterThan(0);
      expect(writes).toEqual(writesOf(CONTROL_REPO, number));
      const reviews = github.reviews.get(`${REPO}#${number}`)!;
      expect(reviews.map((review) => review.body.split("\n")[0])).toEqual(
        AGAIN.includes(number) ? ["Live review.", "Live review."] : ["Live review."],
      );
    }

    // the fates: the live findings by their own, the candidate's held ones never posted
    const { rows } = await pool.query(
      `SELECT f.shadow, f.end_line, f.fate, f.review_id IS NOT NULL AS posted
         FROM svc.review_findings f JOIN svc.invocations i ON i.id = f.invocation_id
         JOIN svc.workloads w ON w.id = i.workload_id WHERE w.pipeline = 'review'`,
    );
    const fates = (shadow: boolean) =>
      rows
        .filter((row) => row.shadow === shadow)
        .map((row) => `${row.end_line} ${row.fate}`)
        .sort();
    expect(fates(false)).toEqual(
      [
        ...Array(PULLS.length + AGAIN.length - 1).fill("2 open"),
        "2 resolved_with_change",
        "21 dismissed",
        "21 thumbed_down",
        ...Array(PULLS.length - 2).fill("21 open"),
      ].sort(),
    );
    expect(rows.filter((row) => !row.shadow).every((row) => row.posted)).toBe(true);
    expect(rows.filter((row) => row.shadow).every((row) => !row.posted)).toBe(true);
    expect(rows.filter((row) => row.shadow)).toHaveLength(2 * PULLS.length + AGAIN.length);
  });

  it("svc eval compare --shadow states tokens and cost per run from the ledger, and shadowing's share of the live cost", async () => {
    const env = { HOME: home, SVC_DAEMON_URL: url };
    const text = await svc(["eval", "compare", "--shadow", "review"], env);
    console.log(`svc eval compare --shadow review\n${text.stdout}`);
    expect(text.stderr).toBe("");
    expect(text.code).toBe(0);
    const result = await svc(["eval", "compare", "--shadow", "review", "--json"], env);
    expect(result.code).toBe(0);
    const json = JSON.parse(result.stdout);

    const runs = await ledger();
    const live = runs.filter((run) => !run.shadow);
    const shadow = runs.filter((run) => run.shadow);
    const pairs = PULLS.length + AGAIN.length;
    expect([live.length, shadow.length]).toEqual([pairs, pairs]);
    // each event's live run and shadow run
    expect(new Set(shadow.map((run) => run.trigger))).toEqual(new Set(live.map((run) => run.trigger)));
    const sum = (list: Ledger[], key: "tokens" | "cost") => list.reduce((n, run) => n + run[key], 0);
    // the ledger against the model API's own count of the calls each side made
    const liveCalls = calls.filter((call) => call.model === "big-model").length;
    expect(sum(shadow, "tokens")).toBe(pairs * USAGE_PER_CALL.total_tokens);
    expect(sum(shadow, "cost")).toBeCloseTo(pairs * perCall(NEXT_PRICE), 9);
    expect(sum(live, "tokens")).toBe(liveCalls * USAGE_PER_CALL.total_tokens);
    expect(sum(live, "cost")).toBeCloseTo(liveCalls * perCall(LIVE_PRICE), 9);

    const share = sum(shadow, "cost") / sum(live, "cost");
    console.log(
      `cost of shadowing: $${sum(shadow, "cost").toFixed(4)} / $${sum(live, "cost").toFixed(4)} = ${share} (costShare ${json.shadowing.costShare})`,
    );
    expect(json.shadowing.live).toEqual({
      runs: pairs,
      tokens: sum(live, "tokens"),
      costUsd: expect.any(Number),
    });
    expect(json.shadowing.shadow).toEqual({
      runs: pairs,
      tokens: sum(shadow, "tokens"),
      costUsd: expect.any(Number),
    });
    expect(json.shadowing.live.costUsd).toBeCloseTo(sum(live, "cost"), 9);
    expect(json.shadowing.shadow.costUsd).toBeCloseTo(sum(shadow, "cost"), 9);
    expect(json.shadowing.costShare).toBeCloseTo(share, 9);
    expect(json.shadowing.tokenShare).toBeCloseTo(sum(shadow, "tokens") / sum(live, "tokens"), 9);
    expect(text.stdout).toContain(
      `shadowing cost $${sum(shadow, "cost").toFixed(4)} over ${pairs} runs beside $${sum(live, "cost").toFixed(4)} over ${pairs} live runs: ${(share * 100).toFixed(1)}% of the live runs' cost`,
    );

    // per run: each version's tokens and cost are its runs' ledger sums
    const median = (values: number[]) => {
      const sorted = [...values].sort((x, y) => x - y);
      const middle = (sorted.length - 1) / 2;
      return (sorted[Math.floor(middle)]! + sorted[Math.ceil(middle)]!) / 2;
    };
    const perRun = (name: string) => json.perRun.find((m: { name: string }) => m.name === name);
    for (const [name, key] of [
      ["tokens", "tokens"],
      ["cost_usd", "cost"],
    ] as const)
      for (const [side, list] of [
        ["live", live],
        ["candidate", shadow],
      ] as const) {
        const values = list.map((run) => run[key]);
        expect(perRun(name)[side].n).toBe(pairs);
        expect(perRun(name)[side].mean).toBeCloseTo(sum(list, key) / pairs, 9);
        expect(perRun(name)[side].p50).toBeCloseTo(median(values), 9);
      }
    expect(text.stdout).toMatch(
      new RegExp(
        `^p50 cost per run\\s+\\$${median(live.map((r) => r.cost))
          .toFixed(4)
          .replace(".", "\\.")}\\s+\\$${median(shadow.map((r) => r.cost))
          .toFixed(4)
          .replace(".", "\\.")}\\s`,
        "m",
      ),
    );

    // the fates: the live version's by its findings, the candidate's by the live finding on its lines
    expect(json).toMatchObject({
      pipeline: "review",
      live: { version: "3.1.0", runs: pairs, findings: 2 * PULLS.length + AGAIN.length },
      candidate: {
        version: "3.2.0-next.1",
        runs: pairs,
        findings: 2 * PULLS.length + AGAIN.length,
        // its line-2 findings meet the live one's; line 22 meets none (the live finding is on 21)
        sameLines: { count: PULLS.length + AGAIN.length, n: 2 * PULLS.length + AGAIN.length },
      },
      tooSmall: false,
    });
    const signal = (name: string) => json.signals.find((s: { name: string }) => s.name === name);
    const n = 2 * PULLS.length + AGAIN.length;
    expect(signal("resolved_with_change")).toMatchObject({
      live: { count: 1, n },
      candidate: { count: 1, n },
    });
    expect(signal("dismissed")).toMatchObject({ live: { count: 1, n }, candidate: { count: 0, n } });
    expect(signal("thumbed_down")).toMatchObject({ live: { count: 1, n }, candidate: { count: 0, n } });
    // every candidate run cost less than every live run: Mann-Whitney says so with ten pairs
    expect(perRun("cost_usd").significant).toBe(true);
    expect(json.verdict).toContain("cost per run (USD)");
  });
});
