import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { seedCosts } from "../../integration/api/costs-seed.ts";
import { type ApiHarness, apiConfig, startApi } from "../../integration/api/support.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { type Run, svc } from "./support.ts";

/** `svc cost` as a real CLI process against the daemon API on loopback, over seeded runs. */
let db: TestDatabase;
let api: ApiHarness;
let home: string;

const env = () => ({ HOME: home, SVC_DAEMON_URL: api.url });

function ok(run: Run): Run {
  expect(run.code, run.stderr).toBe(0);
  return run;
}

beforeAll(async () => {
  db = await createTestDatabase(inject("adminDatabaseUrl"));
  // a local install: loopback bind, no tokens, so the CLI needs no credential
  api = await startApi(db.url, apiConfig(null));
  await seedCosts(api.pool);
  home = await mkdtemp(join(tmpdir(), "svc-cost-cli-"));
});

afterAll(async () => {
  await api?.close();
  await db?.drop();
  if (home) await rm(home, { recursive: true, force: true });
});

describe("svc cost", () => {
  it("--by repo --since 30d prints each repository's runs, tokens and cost, then the total", async () => {
    const run = ok(await svc(["cost", "--by", "repo", "--since", "30d"], env()));
    expect(run.stdout.trimEnd().split("\n")).toEqual([
      expect.stringMatching(/^REPO\s+RUNS\s+TOKENS\s+INPUT\s+OUTPUT\s+COST$/),
      expect.stringMatching(/^acme\/widgets\s+2\s+19,500\s+16,000\s+3,500\s+\$0\.1000$/),
      expect.stringMatching(/^acme\/gadgets\s+1\s+3,300\s+3,000\s+300\s+unpriced$/),
      expect.stringMatching(/^TOTAL\s+3\s+22,800\s+19,000\s+3,800\s+\$0\.1000$/),
    ]);
  });

  it("groups by pipeline by default and by author; --json is the API's answer", async () => {
    const pipelines = ok(await svc(["cost"], env()));
    expect(pipelines.stdout).toMatch(/^PIPELINE\s+RUNS/m);
    expect(pipelines.stdout).toMatch(/^pr-review\s+2\s+19,500/m);
    const json = JSON.parse(ok(await svc(["cost", "--by", "author", "--json"], env())).stdout);
    expect(json.rows.map((row: { key: string }) => row.key)).toEqual(["dana", "lee"]);
    expect(json.total.tokens).toBe(22_800);
  });

  it("refuses a grouping it does not know, and --help shows examples", async () => {
    const refused = await svc(["cost", "--by", "team"], env());
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("Expected --by=team to be one of: repo, pipeline, author");
    const help = ok(await svc(["cost", "--help"], env()));
    expect(help.stdout).toContain("svc cost --by repo --since 30d");
  });
});
