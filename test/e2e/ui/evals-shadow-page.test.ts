import type { BrowserContext } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { newId } from "../../../shared/ids.ts";
import {
  type ApiHarness,
  apiConfig,
  seedLineage,
  startApi,
  tokensBlock,
} from "../../integration/api/support.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { hasChromium, launchChromium, warnWithoutChromium } from "./support.ts";

/**
 * /ui/evals' shadow section in a real browser: twelve events each reviewed by the live version and
 * its shadow candidate, the live findings with the fates people gave them, the candidate's on the
 * same lines or not; the two versions side by side with intervals and p-values, and what
 * shadowing cost as a share of the live runs' cost. `SVC_SCREENSHOT=docs/evals-shadow.png` saves
 * the screenshot docs/evals.md shows.
 */
warnWithoutChromium("test/e2e/ui/evals-shadow-page.test.ts");

const LIVE = "1.4.0";
const CANDIDATE = "1.5.0-next.1";
const PAIRS = 12;

let db: TestDatabase;
let api: ApiHarness;
let browser: BrowserContext;
let closeBrowser: (() => Promise<void>) | undefined;

type Fate = "open" | "resolved_with_change" | "dismissed" | "thumbed_down";

async function finding(invocation: string, shadow: boolean, version: string, line: number, fate: Fate) {
  await api.pool.query(
    `INSERT INTO svc.review_findings (invocation_id, pipeline, version, shadow, repo, pull_number, output_key,
                                      path, start_line, end_line, fingerprint, rule, fate)
     VALUES ($1, 'plain', $2, $3, 'acme/widgets', 7, 'review', 'src/app.ts', $4, $4, $5, 'finding', $6)`,
    [invocation, version, shadow, line, newId("task").slice(4, 20), fate],
  );
}

/** One event's live run and shadow run, `at` hours back; the live run's usage and the shadow's. */
async function seedPair(index: number) {
  const at = new Date(Date.now() - (index + 1) * 3_600_000);
  const live = await seedLineage(api.pool);
  const shadowWorkload = newId("workload");
  const shadowInvocation = newId("invocation");
  await api.pool.query(
    `INSERT INTO svc.workloads (id, trigger_id, pipeline, status, workspace, pipeline_version)
     VALUES ($1, $2, 'plain', 'completed', '/tmp/ws', $3)`,
    [shadowWorkload, live.trigger, CANDIDATE],
  );
  await api.pool.query(
    `INSERT INTO svc.invocations (id, workload_id, status, target, attempts, shadow, outputs_held)
     VALUES ($1, $2, 'completed', 'local-agent', 1, true, true)`,
    [shadowInvocation, shadowWorkload],
  );
  await api.pool.query("UPDATE svc.workloads SET pipeline_version = $2, created_at = $3 WHERE id = $1", [
    live.workload,
    LIVE,
    at,
  ]);
  const runs: [string, number, number][] = [
    [live.invocation, 40_000 + index * 500, 0.12],
    [shadowInvocation, 52_000 + index * 700, 0.05],
  ];
  for (const [invocation, ms, cost] of runs) {
    await api.pool.query(
      "UPDATE svc.invocations SET started_at = $2, finished_at = $3, created_at = $2 WHERE id = $1",
      [invocation, at, new Date(at.getTime() + ms)],
    );
    await api.pool.query(
      `INSERT INTO svc.tasks (id, invocation_id, kind, name, seq, status, exit_code, started_at, usage)
       VALUES ($1, $2, 'agent', 'agent-2', 2, 'completed', 0, $3, $4)`,
      [
        newId("task"),
        invocation,
        at,
        { input_tokens: 20_000 + index * 100, output_tokens: 1_500, cost_usd: cost },
      ],
    );
  }
  // the live review: three findings, the first fixed on most events, the second dismissed on some
  await finding(live.invocation, false, LIVE, 10, index % 4 === 3 ? "open" : "resolved_with_change");
  await finding(live.invocation, false, LIVE, 20, index % 3 === 0 ? "dismissed" : "open");
  await finding(live.invocation, false, LIVE, 30, index === 5 ? "thumbed_down" : "open");
  // the candidate: the fixed one on the same lines, not the dismissed one, one of its own
  await finding(shadowInvocation, true, CANDIDATE, 10, "open");
  await finding(shadowInvocation, true, CANDIDATE, 44, "open");
}

beforeAll(async () => {
  if (!hasChromium) return;
  db = await createTestDatabase(inject("adminDatabaseUrl"));
  api = await startApi(db.url, apiConfig({ tokens: tokensBlock({ evaluator: ["evals:write"] }) }));
  for (let index = 0; index < PAIRS; index++) await seedPair(index);
  ({ browser, close: closeBrowser } = await launchChromium());
});

afterAll(async () => {
  await closeBrowser?.();
  await api?.close();
  await db?.drop();
});

describe.skipIf(!hasChromium)("the shadow comparison on /ui/evals", () => {
  it("shows the live version and its candidate side by side, with the cost of shadowing", async () => {
    const page = await browser.newPage();
    await page.setExtraHTTPHeaders({ authorization: "Bearer secret-evaluator" });
    const answer = await page.goto(`${api.url}/ui/evals?pipeline=plain`);
    expect(answer!.status()).toBe(200);

    const heads = await page.locator("table.shadow thead th").allTextContents();
    expect(heads.slice(1, 3)).toEqual([
      `Live: ${LIVE} (12 runs, 36 findings)`,
      `Candidate: ${CANDIDATE} (12 runs, 24 findings)`,
    ]);
    const row = async (name: string) =>
      page
        .locator("table.shadow tbody tr", { has: page.locator(`td:text-is("${name}")`) })
        .locator("td")
        .allTextContents();
    expect(await row("findings per run")).toEqual([
      "findings per run",
      "3.00 (p50 3)",
      "2.00 (p50 2)",
      expect.stringMatching(/^mann_whitney \(normal\)$/),
      expect.stringMatching(/^\d/),
      "yes",
    ]);
    // 9 of 36 live findings fixed; the candidate's 9 on those lines of 24
    expect(await row("resolved with a change")).toEqual([
      "resolved with a change",
      expect.stringMatching(/^25\.0% \[13\.8–41\.1\] 9\/36$/),
      expect.stringMatching(/^37\.5% \[21\.2–57\.3\] 9\/24$/),
      "chi_square",
      expect.stringMatching(/^0\.\d{4}$/),
      "no",
    ]);
    expect(await row("dismissed")).toEqual([
      "dismissed",
      expect.stringMatching(/^11\.1% .* 4\/36$/),
      expect.stringMatching(/^0\.0% .* 0\/24$/),
      "fisher_exact",
      expect.stringMatching(/^0\.\d{4}$/),
      "no",
    ]);
    expect(await row("on a live finding's lines")).toEqual([
      "on a live finding's lines",
      "—",
      expect.stringMatching(/^50\.0% .* 12\/24$/),
      "—",
      "—",
      "—",
    ]);
    expect(await page.textContent("p.shadowing")).toBe(
      "Shadowing cost $0.6000 over 12 runs beside $1.4400 over 12 live runs: 41.7% of the live runs' cost.",
    );
    expect(await page.textContent("p.shadow[role=status]")).toMatch(
      /^significant at the 5% level: findings per run/,
    );
    expect(await page.locator("script").count()).toBe(0);
    if (process.env.SVC_SCREENSHOT) {
      await page.locator("#shadow").scrollIntoViewIfNeeded();
      await page.screenshot({ path: process.env.SVC_SCREENSHOT, fullPage: true });
    }
    await page.close();
  });

  it("says there is not enough data yet, through the API too", async () => {
    // nine of the candidate's runs failed: a failed run posted nothing to judge, and pairs no more
    await api.pool.query(
      "UPDATE svc.invocations SET status = 'failed' WHERE id IN (SELECT id FROM svc.invocations WHERE shadow LIMIT 9)",
    );
    const page = await browser.newPage();
    await page.setExtraHTTPHeaders({ authorization: "Bearer secret-evaluator" });
    await page.goto(`${api.url}/ui/evals?pipeline=plain`);
    expect(await page.textContent("p.shadow[role=status]")).toBe(
      `not enough data yet: 3 paired runs of ${LIVE} and ${CANDIDATE}; each version needs at least 10 (the numbers are shown, no conclusion is drawn)`,
    );
    await page.close();
    const answer = await api.request("GET", "/evals/compare?shadow=plain", { token: "secret-evaluator" });
    expect(answer.status).toBe(200);
    expect(await answer.json()).toMatchObject({ live: { version: LIVE, runs: 3 }, tooSmall: true });
  });
});
