import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type ApiHarness, apiConfig, startApi, tokensBlock } from "../../integration/api/support.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { hasChromium, launchChromium, seedRuns, warnWithoutChromium, XSS_PAYLOAD } from "./support.ts";

/**
 * The trace pages in a real browser: Debian's Chromium driven by playwright-core. Where
 * /usr/bin/chromium is absent the file is skipped and says so. `SVC_SCREENSHOT=docs/trace-page.png`
 * also saves the screenshot the README shows.
 */
warnWithoutChromium("test/e2e/ui/trace-page.test.ts");

let db: TestDatabase;
let api: ApiHarness;
let browser: BrowserContext;
let closeBrowser: (() => Promise<void>) | undefined;
let runs: Awaited<ReturnType<typeof seedRuns>>;

beforeAll(async () => {
  if (!hasChromium) return;
  db = await createTestDatabase(inject("adminDatabaseUrl"));
  api = await startApi(db.url, apiConfig({ tokens: tokensBlock({ reader: ["triggers:read"] }) }));
  runs = await seedRuns(api.pool);
  ({ browser, close: closeBrowser } = await launchChromium());
});

afterAll(async () => {
  await closeBrowser?.();
  await api?.close();
  await db?.drop();
});

async function signedInPage(): Promise<{ page: Page; dialogs: string[] }> {
  await browser.clearCookies();
  const page = await browser.newPage();
  const dialogs: string[] = [];
  page.on("dialog", (dialog) => {
    dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  const first = await page.goto(`${api.url}/ui/trace/${runs.done.trigger}`);
  expect(first!.status()).toBe(401);
  await page.fill('input[name="token"]', "secret-reader");
  await Promise.all([
    page.waitForURL(`**/ui/trace/${runs.done.trigger}`),
    page.click('button[type="submit"]'),
  ]);
  return { page, dialogs };
}

describe.skipIf(!hasChromium)("trace page in Chromium", () => {
  it("signs in through the form into an HttpOnly, SameSite=Strict cookie and shows a completed run", async () => {
    const { page } = await signedInPage();
    const cookies = await page.context().cookies();
    expect(cookies).toHaveLength(1);
    expect(cookies[0]).toMatchObject({
      name: "svc_ui_token",
      httpOnly: true,
      sameSite: "Strict",
      path: "/ui",
    });
    await expect.poll(() => page.textContent("h1")).toContain(runs.done.trigger);
    expect(await page.textContent(`#${runs.done.invocation}`)).toContain("completed");
    expect(await page.locator("table.tasks tbody tr").count()).toBe(3);
    expect(await page.textContent(`#${runs.done.invocation}`)).toContain("hello agent");
    if (process.env.SVC_SCREENSHOT) {
      await page.click("#payload summary");
      await page.screenshot({ path: process.env.SVC_SCREENSHOT, fullPage: true });
    }
    await page.close();
  });

  it("shows a failed run's diagnostic", async () => {
    const { page } = await signedInPage();
    const response = await page.goto(`${api.url}/ui/trace/${runs.failed.invocation}`);
    expect(response!.status()).toBe(200);
    const diagnostic = page.locator(`#${runs.failed.invocation} .diagnostic`).first();
    expect(await diagnostic.textContent()).toContain("agent_timeout");
    expect(await diagnostic.textContent()).toContain("the agent ran past 20m");
    await page.close();
  });

  it("renders a payload with a script tag as text, fires no dialog, and forbids inline script by CSP", async () => {
    const { page, dialogs } = await signedInPage();
    const response = await page.goto(`${api.url}/ui/trace/${runs.xss}`);
    const csp = response!.headers()["content-security-policy"] ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'none'");
    expect(csp).not.toContain("unsafe-inline");
    await page.click("#payload summary");
    const shown = await page.textContent("#payload pre");
    expect(JSON.parse(shown!)).toEqual(XSS_PAYLOAD);
    expect(await page.locator("main script").count()).toBe(0);
    expect(dialogs).toEqual([]);
    await page.close();
  });

  it("lists triggers filtered by status and diagnostic code, linking to their traces", async () => {
    const { page } = await signedInPage();
    await page.goto(`${api.url}/ui/triggers`);
    await page.selectOption('select[name="status"]', "error");
    await page.fill('input[name="code"]', "agent_timeout");
    await Promise.all([
      page.waitForURL("**/ui/triggers?*"),
      page.click('form.filters button[type="submit"]'),
    ]);
    const links = await page.locator("main table a").allTextContents();
    expect(links).toEqual([runs.failed.trigger]);
    await Promise.all([page.waitForURL(`**/ui/trace/${runs.failed.trigger}`), page.click("main table a")]);
    expect(await page.textContent("#trigger .diagnostic")).toContain("agent_timeout");
    await page.close();
  });
});
