import type { BrowserContext } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
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
 * /ui/evals in a real browser (Debian's Chromium through playwright-core): the comparison table of
 * two versions, the server-drawn SVG chart, and a curated case whose note is a script tag, shown
 * as text. Where /usr/bin/chromium is absent the file is skipped and says so.
 * `SVC_SCREENSHOT=docs/evals-page.png` also saves the screenshot docs/evals.md shows.
 */
warnWithoutChromium("test/e2e/ui/evals-page.test.ts");
const HOSTILE_NOTE = "<script>alert('evals')</script> & \"quoted\"";

let db: TestDatabase;
let api: ApiHarness;
let browser: BrowserContext;
let closeBrowser: (() => Promise<void>) | undefined;

/** `runs` finished runs of pipeline plain at `version`, the first `completed` of them completed, `daysAgo` days back. */
async function seedVersion(
  version: string,
  runs: number,
  completed: number,
  daysAgo: number,
): Promise<string[]> {
  const invocations: string[] = [];
  for (let index = 0; index < runs; index++) {
    const { invocation, workload } = await seedLineage(api.pool, { failed: index >= completed });
    const at = new Date(Date.now() - daysAgo * 86_400_000 - index * 4 * 3_600_000);
    await api.pool.query("UPDATE svc.workloads SET pipeline_version = $2, created_at = $3 WHERE id = $1", [
      workload,
      version,
      at,
    ]);
    await api.pool.query("UPDATE svc.invocations SET started_at = $2, finished_at = $3 WHERE id = $1", [
      invocation,
      at,
      new Date(at.getTime() + 1_000 + index * 100),
    ]);
    invocations.push(invocation);
  }
  return invocations;
}

beforeAll(async () => {
  if (!hasChromium) return;
  db = await createTestDatabase(inject("adminDatabaseUrl"));
  api = await startApi(db.url, apiConfig({ tokens: tokensBlock({ evaluator: ["evals:write"] }) }));
  const [first] = await seedVersion("1.0.0", 12, 11, 3);
  await seedVersion("1.1.0", 12, 6, 1);
  const curated = await api.request("POST", "/evals", {
    token: "secret-evaluator",
    body: { invocation: first, expected: "pass", notes: HOSTILE_NOTE, tags: ["smoke"] },
  });
  expect(curated.status).toBe(201);
  ({ browser, close: closeBrowser } = await launchChromium());
});

afterAll(async () => {
  await closeBrowser?.();
  await api?.close();
  await db?.drop();
});

describe.skipIf(!hasChromium)("evals page in Chromium", () => {
  it("signs in with an evals:write token and compares the two latest versions as a table", async () => {
    const page = await browser.newPage();
    const dialogs: string[] = [];
    page.on("dialog", (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    const first = await page.goto(`${api.url}/ui/evals?pipeline=plain`);
    expect(first!.status()).toBe(401);
    await page.fill('input[name="token"]', "secret-evaluator");
    await Promise.all([page.waitForURL("**/ui/evals?pipeline=plain"), page.click('button[type="submit"]')]);

    expect(await page.inputValue('input[name="a"]')).toBe("version:1.0.0");
    expect(await page.inputValue('input[name="b"]')).toBe("version:1.1.0");
    const completed = page.locator("table.comparison tbody tr").first();
    expect(await completed.locator("td").allTextContents()).toEqual([
      "completed rate",
      expect.stringMatching(/^91\.7% \[64\.6–98\.5\] 11\/12$/),
      expect.stringMatching(/^50\.0% \[25\.4–74\.6\] 6\/12$/),
      "fisher_exact",
      expect.stringMatching(/^0\.0686$/),
      "no",
    ]);
    expect(await page.textContent("p.verdict")).toBe("no significant difference at the 5% level");

    // the chart: one line per version, drawn by the server, no script anywhere
    expect(await page.locator("svg.chart polyline").count()).toBe(2);
    expect(await page.locator("svg.chart").textContent()).toContain("1.1.0");
    expect(await page.locator("script").count()).toBe(0);

    // the hostile note is text, not markup
    expect(await page.textContent("td.notes")).toBe(HOSTILE_NOTE);
    expect(dialogs).toEqual([]);
    if (process.env.SVC_SCREENSHOT)
      await page.screenshot({ path: process.env.SVC_SCREENSHOT, fullPage: true });
    await page.close();
  });

  it("says when the cohorts are too small and refuses a malformed one", async () => {
    const page = await browser.newPage();
    await page.setExtraHTTPHeaders({ authorization: "Bearer secret-evaluator" });
    await page.goto(`${api.url}/ui/evals?pipeline=plain&a=cases&b=version:1.1.0`);
    expect(await page.textContent("p.error")).toBe(
      "too small to conclude: cohort a has 1 runs and cohort b has 12; each needs at least 10",
    );
    const refused = await page.goto(`${api.url}/ui/evals?pipeline=plain&a=v1&b=version:1.1.0`);
    expect(refused!.status()).toBe(400);
    expect(await page.textContent("p.error")).toContain('"a" must be a cohort such as version:1.2.0');
    await page.close();
  });
});
