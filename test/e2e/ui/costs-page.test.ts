import { stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BrowserContext } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { seedCosts } from "../../integration/api/costs-seed.ts";
import { type ApiHarness, apiConfig, startApi, tokensBlock } from "../../integration/api/support.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { hasChromium, launchChromium, warnWithoutChromium } from "./support.ts";

/**
 * /ui/costs in a real browser (Debian's Chromium through playwright-core): the table of what runs
 * cost per repository with its total, and the per-day chart drawn by the server, no script. It
 * saves a screenshot to SVC_SCREENSHOT, else to svc-costs-page.png in the temporary directory.
 */
warnWithoutChromium("test/e2e/ui/costs-page.test.ts");
const SCREENSHOT = process.env.SVC_SCREENSHOT ?? join(tmpdir(), "svc-costs-page.png");

let db: TestDatabase;
let api: ApiHarness;
let browser: BrowserContext;
let closeBrowser: (() => Promise<void>) | undefined;

beforeAll(async () => {
  if (!hasChromium) return;
  db = await createTestDatabase(inject("adminDatabaseUrl"));
  api = await startApi(db.url, apiConfig({ tokens: tokensBlock({ reader: ["triggers:read"] }) }));
  await seedCosts(api.pool);
  ({ browser, close: closeBrowser } = await launchChromium());
});

afterAll(async () => {
  await closeBrowser?.();
  await api?.close();
  await db?.drop();
});

describe.skipIf(!hasChromium)("costs page in Chromium", () => {
  it("signs in with a triggers:read token and shows the costs per repository and per day", async () => {
    const page = await browser.newPage();
    const first = await page.goto(`${api.url}/ui/costs?by=repo&since=30d`);
    expect(first!.status()).toBe(401);
    await page.fill('input[name="token"]', "secret-reader");
    await Promise.all([
      page.waitForURL("**/ui/costs?by=repo&since=30d"),
      page.click('button[type="submit"]'),
    ]);

    const rows = await page
      .locator("table.costs tbody tr")
      .evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent)));
    expect(rows).toEqual([
      ["acme/widgets", "2", "19,500", "$0.1000"],
      ["acme/gadgets", "1", "3,300", "unpriced"],
    ]);
    expect(await page.locator("table.costs tfoot th").allTextContents()).toEqual([
      "Total",
      "3",
      "22,800",
      "$0.1000",
    ]);
    // the chart: a bar per day with usage (the run 40 days back is outside the window)
    expect(await page.locator("svg.chart rect.bar").count()).toBe(3);
    expect(await page.locator("svg.chart").getAttribute("aria-label")).toBe("cost in USD per day");
    expect(await page.locator("script").count()).toBe(0);
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    expect((await stat(SCREENSHOT)).size).toBeGreaterThan(0);
    await page.close();
  });

  it("by author over a wider window, and a refused grouping says why", async () => {
    const page = await browser.newPage();
    await page.setExtraHTTPHeaders({ authorization: "Bearer secret-reader" });
    await page.goto(`${api.url}/ui/costs?by=author&since=60d`);
    expect(await page.locator("table.costs tbody td:first-child").allTextContents()).toEqual(["dana", "lee"]);
    const refused = await page.goto(`${api.url}/ui/costs?by=team`);
    expect(refused!.status()).toBe(400);
    expect(await page.textContent("p.error")).toBe('"by" must be one of repo, pipeline, author');
    await page.close();
  });
});
