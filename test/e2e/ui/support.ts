import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type pg from "pg";
import { type BrowserContext, chromium } from "playwright-core";
import { newId } from "../../../shared/ids.ts";
import { seedLineage, VIA_PROXY } from "../../integration/api/support.ts";

export const XSS_PAYLOAD = { title: "<script>alert(1)</script>", note: `"quoted" & 'single'` };

/**
 * A completed run (setup steps then the agent, each with its time), a failed one (agent_timeout),
 * and a trigger whose payload carries a script tag.
 */
export async function seedRuns(pool: pg.Pool) {
  const done = await seedLineage(pool);
  const failed = await seedLineage(pool, { failed: true });
  const base = Date.now() - 60_000;
  const at = (ms: number) => new Date(base + ms);
  await pool.query("UPDATE svc.invocations SET started_at = $2, finished_at = $3 WHERE id = $1", [
    done.invocation,
    at(0),
    at(42_000),
  ]);
  await pool.query("UPDATE svc.tasks SET seq = 3, started_at = $2, finished_at = $3 WHERE id = $1", [
    done.task,
    at(9_000),
    at(41_500),
  ]);
  const steps: [string, number, number][] = [
    ["npm ci", 0, 6_500],
    ["npm test", 6_600, 8_800],
  ];
  for (const [index, [name, start, end]] of steps.entries()) {
    await pool.query(
      `INSERT INTO svc.tasks (id, invocation_id, kind, name, seq, status, exit_code, started_at, finished_at)
       VALUES ($1, $2, 'setup', $3, $4, 'completed', 0, $5, $6)`,
      [newId("task"), done.invocation, name, index + 1, at(start), at(end)],
    );
  }
  const xss = newId("trigger");
  await pool.query(
    `INSERT INTO svc.triggers (id, kind, source, event_name, status, payload)
     VALUES ($1, 'webhook', 'deploy-hook', 'deploy-hook', 'completed', $2)`,
    [xss, JSON.stringify(XSS_PAYLOAD)],
  );
  return { done, failed, xss };
}

/** Debian's Chromium, driven by playwright-core; a browser test file is skipped where it is absent. */
export const CHROMIUM = "/usr/bin/chromium";
export const hasChromium = existsSync(CHROMIUM);

/** Says (once per file) that `file` is skipped and how to install the browser. */
export function warnWithoutChromium(file: string): void {
  if (!hasChromium)
    console.warn(
      `SKIPPED ${file}: no browser at ${CHROMIUM} (install it with \`apt-get install -y chromium\`)`,
    );
}

/** A headless Chromium with a new, empty profile; `close` ends it and removes the profile. */
export async function launchChromium(): Promise<{ browser: BrowserContext; close(): Promise<void> }> {
  const profile = await mkdtemp(join(tmpdir(), "svc-chromium-"));
  // a persistent context is how playwright takes a --user-data-dir: a new, empty one per run
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    viewport: { width: 1200, height: 900 },
    // a browser reaches the pages through the reverse proxy; on bare loopback it would need no token
    extraHTTPHeaders: VIA_PROXY,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  return {
    browser,
    close: async () => {
      await browser.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}
